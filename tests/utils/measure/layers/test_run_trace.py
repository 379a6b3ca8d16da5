"""trace.json below the layer: steps, sampled stacks and counters on one clock, alone or joined to a torch
profiler trace on its Unix clock."""
import pytest

from utils.measure.below_layer.record import BatchCounters
from utils.measure.layers.chrome_trace import PROCESS_NAME, complete_events
from utils.measure.layers.run_trace import (COUNTERS_PROCESS, SAMPLES_PROCESS, STEPS_PROCESS, below_trace, counter_events,
                                    step_events)
from utils.record.steps import PIPELINE_STEP, PassKind, StepRecord

ORIGIN_NS = 5_000_000_000
RECORDS = [StepRecord(PIPELINE_STEP, None, PassKind.TIMED, 0, 0, 1, ORIGIN_NS + 1_000_000, ORIGIN_NS + 3_000_000),
           StepRecord("forward", PIPELINE_STEP, PassKind.TIMED, 0, 0, 1, ORIGIN_NS + 1_500_000, ORIGIN_NS + 2_500_000),
           StepRecord(PIPELINE_STEP, None, PassKind.WARMUP, 0, 0, 1, ORIGIN_NS, ORIGIN_NS + 500_000)]
SAMPLES = [{"ph": "X", "name": "conv", "tid": 77, "ts": (ORIGIN_NS + 1_600_000) / 1e3, "dur": 200.0}]
BATCHES = [BatchCounters(ORIGIN_NS + 900_000, ORIGIN_NS + 3_100_000, {1: {"task_clock_ns": 2e6},
                                                                       2: {"task_clock_ns": 1e6}})]


def _process_names(trace):
    return {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == PROCESS_NAME}


def test_alone_the_trace_starts_at_the_step_origin():
    trace = below_trace(None, 0, ORIGIN_NS, step_events(RECORDS), SAMPLES, counter_events(BATCHES),
                        {77: "main thread"})
    names = _process_names(trace)
    assert set(names.values()) == {STEPS_PROCESS, SAMPLES_PROCESS, COUNTERS_PROCESS}
    forward = complete_events(trace, "forward")[0]
    assert forward["ts"] == pytest.approx(1500.0) and forward["dur"] == pytest.approx(1000.0)
    assert len(complete_events(trace, PIPELINE_STEP)) == 1  # the warm-up is not a timed step
    conv = complete_events(trace, "conv")[0]
    assert conv["ts"] == pytest.approx(1600.0) and names[conv["pid"]] == SAMPLES_PROCESS
    clock = [e for e in trace["traceEvents"] if e.get("ph") == "C" and e["name"] == "task_clock_ns"]
    assert [(e["ts"], e["args"]["task_clock_ns"]) for e in clock] == [(900.0, 3e6), (3100.0, 0)]


def test_joined_to_a_profiler_trace_on_its_unix_clock():
    unix_minus_perf = 1_700_000_000_000_000_000
    base_ns = unix_minus_perf + ORIGIN_NS  # the profiler's ts 0 is the steps' origin, on the Unix clock
    base = {"baseTimeNanoseconds": base_ns, "traceEvents": [
        {"ph": "X", "name": "aten::conv2d", "pid": 10, "tid": 10, "ts": 1600.0, "dur": 100.0}]}
    trace = below_trace(base, unix_minus_perf, ORIGIN_NS, step_events(RECORDS), SAMPLES, [], {77: "main"})
    forward = complete_events(trace, "forward")[0]
    assert forward["ts"] == pytest.approx(1500.0)
    assert complete_events(trace, "aten::conv2d")[0]["ts"] == 1600.0
    assert complete_events(trace, "conv")[0]["ts"] == pytest.approx(1600.0)
