"""utils/scenarios/loadgen/results.py: LoadGen's detail log read into the scenario's verdict, and detections
through its accuracy log."""
import json

import numpy as np

from utils.scenarios.loadgen.results import accuracy_log_detections, detail_entries, encode_detections, scenario_result


def _line(key, value):
    return ":::MLLOG " + json.dumps({"key": key, "value": value, "time_ms": 1.0})


def test_the_verdict_is_read_from_the_detail_log_and_the_last_word_wins():
    lines = [_line("result_validity", "VALID"), "not a log line", ":::MLLOG {cut short",
             _line("result_validity", "INVALID"), _line("result_min_duration_met", False),
             _line("result_min_queries_met", True), _line("early_stopping_met", True),
             _line("result_invalid_reason", "Reduce target QPS. "), _line("result_completed_samples_per_sec", 12.5),
             _line("result_90.00_percentile_latency_ns", 2_500_000), _line("result_99.90_percentile_latency_ns", 9e6),
             _line("early_stopping_result", " * Early stopping 90.0th percentile estimate: 3000000 \n * ok")]
    result = scenario_result(detail_entries(lines))
    assert result["valid"] is False
    assert result["reason"] == "min duration not met; Reduce target QPS."
    assert result["met"] == {"min_duration": False, "min_queries": True, "latency_bound": None, "early_stopping": True}
    assert result["samples_per_s"] == 12.5
    assert result["latency_ms"]["p90"] == 2.5 and result["latency_ms"]["p99.9"] == 9.0
    assert result["early_stopping"]["estimates_ms"] == {"p90": 3.0}
    assert result["early_stopping"]["text"] == "* Early stopping 90.0th percentile estimate: 3000000 * ok"
    assert scenario_result({})["valid"] is None


def test_detections_survive_the_accuracy_log_round_trip():
    rows = np.array([[1, 2, 30, 40, 0.9, 16], [5, 6, 7, 8, 0.25, 0]], dtype=np.float32)
    document = [{"seq_id": 0, "qsl_idx": 3, "data": encode_detections(rows).hex().upper()},
                {"seq_id": 1, "qsl_idx": 1, "data": ""}]
    found = accuracy_log_detections(document)
    assert np.array_equal(found[3], rows) and found[1].shape == (0, 6)

