"""ONNX Runtime's own events of the profiled batch: readable node names, only the batch's runs, on the torch
trace's clock inside the forward step, and left out with a warning where the clocks do not line up."""
import json

import pytest

from tests.support.helpers import metadata, torch_like_trace
from tests.support.onnxruntime_profiles import ort_profile
from utils.measure.layers.chrome_trace import complete_events, lies_within
from pipelines.runtimes.onnxruntime.trace import trace_events
from utils.measure.layers.runtime_trace import RuntimeEvents, batch_events, trace_for_viewers


def onnxruntime_events(profile_events: list[dict], warmup_runs: int) -> tuple[dict, ...]:
    """ONNX Runtime's trace reader's events, then the batch's among them."""
    return batch_events(trace_events(profile_events), warmup_runs)


BASE_NS = torch_like_trace()["baseTimeNanoseconds"]
MONOTONIC_NS = 12_000_000_000_000
# The session started 95 us before the trace's origin on the Unix clock: its run at 300 us is at 205 us on
# the torch trace's timeline, inside the forward step (200 to 250 us).
SESSION_START_NS = BASE_NS - 95_000


@pytest.mark.parametrize("reported_ns", [SESSION_START_NS, MONOTONIC_NS - 1_000_000],
                         ids=["wall clock", "monotonic clock"])
def test_runtime_events_merge_inside_the_forward_step(reported_ns):
    # the clocks were read 1 ms after the start
    runtime = RuntimeEvents("onnxruntime 1.0", onnxruntime_events(ort_profile(), warmup_runs=1), reported_ns,
                            wall_ns=SESSION_START_NS + 1_000_000, monotonic_ns=MONOTONIC_NS)
    trace_json, warnings = trace_for_viewers(json.dumps(torch_like_trace()), "detbench", 40, 40, runtime)
    trace = json.loads(trace_json)
    assert warnings == []
    merged = [event for event in trace["traceEvents"] if event["ph"] == "X" and event["pid"] == 44]
    assert {event["tid"] for event in merged} == {45}
    assert [event["ts"] for event in merged] == pytest.approx([205, 206, 210, 231, 235])
    assert all(lies_within(event, complete_events(trace, "forward")) for event in merged)
    assert metadata(trace, "process_name")[44] == "onnxruntime 1.0"
    assert metadata(trace, "thread_name")[(44, 45)] == "thread 9"
    assert len(complete_events(trace)) == 5 + 5


@pytest.mark.parametrize("reported_ns, reason", [
    (SESSION_START_NS + 10**9, "do not lie inside the 1 forward step"),  # a clock a second off
    (7, "neither the wall clock"),
])
def test_runtime_events_that_miss_the_forward_are_left_out_with_a_warning(reported_ns, reason):
    runtime = RuntimeEvents("onnxruntime 1.0", onnxruntime_events(ort_profile(), warmup_runs=1), reported_ns,
                            wall_ns=SESSION_START_NS, monotonic_ns=MONOTONIC_NS)
    trace_json, warnings = trace_for_viewers(json.dumps(torch_like_trace()), "detbench", 40, 40, runtime)
    assert len(warnings) == 1 and "onnxruntime 1.0's own events were left out" in warnings[0]
    assert reason in warnings[0]
    assert len(complete_events(json.loads(trace_json))) == 5
