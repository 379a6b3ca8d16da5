"""ONNX Runtime's own events of the profiled batch: readable node names, only the batch's runs, on the torch
trace's clock inside the forward step, and left out with a warning where the clocks do not line up."""
import json

import pytest

from tests.support.helpers import metadata, torch_like_trace
from utils.measure.layers.chrome_trace import complete_events, lies_within
from pipelines.runtimes.onnxruntime.trace import readable_node, trace_events
from utils.measure.layers.runtime_trace import RuntimeEvents, batch_events, trace_for_viewers


def onnxruntime_events(profile_events: list[dict], warmup_runs: int) -> tuple[dict, ...]:
    """ONNX Runtime's trace reader's events, then the batch's among them."""
    return batch_events(trace_events(profile_events), warmup_runs)


def ort_profile() -> list[dict]:
    """ONNX Runtime's profile shape: session set-up, a warm-up run, then the pass's run; ts from the start."""
    def event(cat, name, ts, dur, **args):
        return {"cat": cat, "pid": 9, "tid": 9, "ph": "X", "name": name, "ts": ts, "dur": dur, "args": args}
    return [
        event("Session", "session_initialization", 0, 100),
        event("Session", "model_run", 200, 50),
        event("Node", "/model.0/conv/Conv_kernel_time", 210, 20, op_name="Conv"),
        event("Session", "model_run", 300, 40),
        event("Session", "SequentialExecutor::Execute", 301, 38),
        event("Node", "/model.0/act/LeakyRelu_output_0_nchwc_kernel_time", 305, 20, op_name="Conv"),
        event("Node", "/model.77/Sigmoid_kernel_time", 326, 3, op_name="Sigmoid"),
        event("Node", "ReorderOutput_token_1_kernel_time", 330, 2, op_name="ReorderOutput"),
    ]


def test_node_names_are_module_paths_and_keep_the_onnx_name():
    node = readable_node(ort_profile()[5])
    assert node["name"] == "model.0/Conv"  # a fused Conv+LeakyRelu belongs to model.0, as in layer_timer.csv
    assert node["args"]["onnx_node"] == "/model.0/act/LeakyRelu_output_0_nchwc" and node["args"]["op_name"] == "Conv"
    assert readable_node(ort_profile()[7])["name"] == "Model/ReorderOutput"


def test_only_the_runs_after_the_warm_up_are_kept():
    events = onnxruntime_events(ort_profile(), warmup_runs=1)
    assert [event["name"] for event in events] == ["model_run", "SequentialExecutor::Execute", "model.0/Conv",
                                                   "model.77/Sigmoid", "Model/ReorderOutput"]
    assert [event["ts"] for event in events] == [300, 301, 305, 326, 330]  # still from the session's start


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
