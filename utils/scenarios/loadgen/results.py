"""LoadGen's verdict as plain data, read from its own detail log, and the detections its accuracy log holds.

LoadGen writes one `:::MLLOG {json}` line per fact into mlperf_log_detail.txt; the result keys (`result_*`,
`early_stopping_*`) are what its summary file prints. Nothing here runs LoadGen.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from utils.checks.accuracy.coco_map import coco_evaluation

MLLOG_PREFIX = ":::MLLOG "
# One detection in a response to LoadGen: x1 y1 x2 y2 score label, float32, in the original image's pixels.
DETECTION_VALUES = 6
_PERCENTILE = re.compile(r"^result_(\d+\.\d+)_percentile_latency_ns$")
_EARLY_ESTIMATE = re.compile(r"Early stopping (\d+(?:\.\d+)?)th percentile estimate: (\d+)")


def detail_entries(lines: Iterable[str]) -> dict[str, Any]:
    """key -> value of every MLLOG line; a key logged twice keeps its last value (LoadGen's final word)."""
    entries: dict[str, Any] = {}
    for line in lines:
        if line.startswith(MLLOG_PREFIX):
            try:
                entry = json.loads(line[len(MLLOG_PREFIX):])
            except json.JSONDecodeError:
                continue  # a line cut by a stop: the rest of the log still says what it says
            entries[entry.get("key")] = entry.get("value")
    return entries


def _ms(ns: Any) -> Any:
    return ns / 1e6 if isinstance(ns, (int, float)) else None


def scenario_result(entries: dict[str, Any]) -> dict[str, Any]:
    """summary.json `scenario.result`: valid or not and why, samples/s, latency percentiles (ms) and the
    early-stopping verdict and estimates, from the detail log's entries."""
    if "result_validity" not in entries:
        return {"valid": None, "reason": "LoadGen wrote no result (the test did not finish)"}
    checks = {"min_duration": "result_min_duration_met", "min_queries": "result_min_queries_met",
              "latency_bound": "result_perf_constraints_met", "early_stopping": "early_stopping_met"}
    met = {name: entries.get(key) for name, key in checks.items()}
    reasons = [f"{name.replace('_', ' ')} not met" for name, value in met.items() if value is False]
    if entries.get("result_invalid_reason"):
        reasons.append(str(entries["result_invalid_reason"]).strip())
    percentiles = {f"p{float(match.group(1)):g}": _ms(value) for key, value in entries.items()
                   if (match := _PERCENTILE.match(key))}
    early = str(entries.get("early_stopping_result") or "")
    samples_per_s = next((entries[key] for key in ("result_samples_per_second", "result_completed_samples_per_sec",
                                                   "result_qps_with_loadgen_overhead") if key in entries), None)
    return {
        "valid": entries["result_validity"] == "VALID",
        "reason": "; ".join(reasons) if entries["result_validity"] != "VALID" else None,
        "met": met,  # each of LoadGen's conditions: True, False, or None where the scenario has none
        "samples_per_s": samples_per_s,
        "scheduled_samples_per_s": entries.get("result_scheduled_samples_per_sec"),
        "queries": entries.get("result_query_count"),
        "overlatency_queries": entries.get("result_overlatency_query_count"),
        "latency_ms": {"min": _ms(entries.get("result_min_latency_ns")),
                       "mean": _ms(entries.get("result_mean_latency_ns")),
                       "max": _ms(entries.get("result_max_latency_ns")), **percentiles},
        "early_stopping": {
            "met": entries.get("early_stopping_met"),
            "text": " ".join(early.split()) or None,
            "estimates_ms": {f"p{float(p):g}": int(ns) / 1e6 for p, ns in _EARLY_ESTIMATE.findall(early)},
        },
    }


def encode_detections(rows: np.ndarray) -> bytes:
    """A response's payload: (N, 6) float32 rows, the bytes LoadGen copies into its accuracy log."""
    return np.ascontiguousarray(rows, dtype=np.float32).reshape(-1, DETECTION_VALUES).tobytes()


def accuracy_log_detections(document: list[dict]) -> dict[int, np.ndarray]:
    """mlperf_log_accuracy.json (parsed) -> sample index -> (N, 6) float32 detections; an index answered twice
    keeps its first answer (accuracy mode answers each once)."""
    found: dict[int, np.ndarray] = {}
    for entry in document:
        rows = np.frombuffer(bytes.fromhex(entry["data"]), dtype=np.float32).reshape(-1, DETECTION_VALUES)
        found.setdefault(int(entry["qsl_idx"]), rows)
    return found


@dataclass(frozen=True)
class _LoggedDetections:
    boxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


def accuracy_log_map(document: list[dict], truths: Sequence[Any], class_names: Sequence[str] = ()) -> dict[str, Any]:
    """The COCO mAP of the answers LoadGen's accuracy mode logged, against `truths` (one per sample index, the
    dataset's order); a sample LoadGen never answered counts as answered with nothing."""
    logged = accuracy_log_detections(document)
    empty = np.zeros((0, DETECTION_VALUES), dtype=np.float32)
    answers = [logged.get(index, empty) for index in range(len(truths))]
    found = [_LoggedDetections(rows[:, :4], rows[:, 4], rows[:, 5].astype(np.int64)) for rows in answers]
    result = coco_evaluation(truths, found, class_names)
    return {"map_50_95": result.map_50_95, "map_50": result.map_50, "map_75": result.map_75,
            "ar_100": result.ar_100, "images": result.images, "objects": result.objects,
            "detections": result.detections, "samples_answered": sum(1 for i in range(len(truths)) if i in logged)}
