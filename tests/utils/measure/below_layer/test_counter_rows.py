"""The CPU counters' rows per pass and thread (utils/measure/below_layer/counter_rows.py), summed against
hand-computed cases, and the summary that says where the counts come from."""
import pytest

from utils.measure.below_layer.record import BatchCounters
from utils.measure.below_layer.counter_rows import PROCESS_ROW, counter_rows, counters_summary
from utils.record.steps import PIPELINE_STEP, PassKind, StepRecord


def test_rows_sum_per_pass_against_hand_computed():
    records = [StepRecord(PIPELINE_STEP, None, PassKind.TIMED, 0, 0, 1, 100, 200),
               StepRecord(PIPELINE_STEP, None, PassKind.TIMED, 1, 0, 1, 300, 500),
               StepRecord(PIPELINE_STEP, None, PassKind.WARMUP, 0, 0, 1, 10, 20)]
    batches = [BatchCounters(90, 210, {1: {"task_clock_ns": 80.0, "cycles": 200.0, "instructions": 300.0,
                                           "voluntary_switches": 2.0},
                                       2: {"task_clock_ns": 20.0, "proc_minor_faults": 4.0}}),
               BatchCounters(290, 510, {1: {"cpu_user_ticks": 1.0, "cpu_system_ticks": 1.0}}),
               BatchCounters(5, 25, {1: {"task_clock_ns": 1e9}})]  # the warm-up: no timed step inside
    rows = counter_rows(batches, records, {1: "main", 2: "omp"}, tick_ms=10.0)
    first = [row for row in rows if row["pass_index"] == 0]
    assert [row["thread"] for row in first] == ["main", "omp", PROCESS_ROW]
    main = first[0]
    assert main["wall_ms"] == pytest.approx(100e-6) and main["cpu_ms"] == pytest.approx(80e-6)
    assert main["cpu_per_wall"] == pytest.approx(0.8) and main["ipc"] == pytest.approx(1.5)
    assert first[1]["minor_faults"] == 4.0
    assert first[2]["cpu_ms"] == pytest.approx(100e-6)
    assert main["system_ms"] is None and first[2]["images"] == 1  # no /proc ticks in that batch; one image
    second = [row for row in rows if row["pass_index"] == 1][0]
    assert second["cpu_ms"] == pytest.approx(20.0) and second["cpu_source"].startswith("/proc ticks")
    assert second["system_ms"] == pytest.approx(10.0)  # one system tick of 10 ms
    summary = counters_summary(rows, ["task_clock_ns"], {"cycles": "not supported [ENOENT]"}, False)
    assert summary["status"] == "measured" and len(summary["passes"]) == 2
    assert summary["hardware"] == "unavailable: not supported [ENOENT]"
    assert counters_summary([], [], {}, False)["status"] == "unavailable"
