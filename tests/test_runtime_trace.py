"""ONNX Runtime's own events of the profiled batch: readable node names, only the batch's runs, on the torch
trace's clock inside the forward step, and left out with a warning where the clocks do not line up."""
import json

from tests.test_chrome_trace import metadata, torch_like_trace
from utils.record.chrome_trace import complete_events, lies_within
from utils.recorders.runtime_trace import RuntimeEvents, onnxruntime_events, readable_node, trace_for_viewers


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


def test_only_the_runs_after_the_warm_up_are_kept_on_the_unix_clock():
    events = onnxruntime_events(ort_profile(), start_unix_ns=5_000_000, warmup_runs=1)
    assert [event["name"] for event in events] == ["model_run", "SequentialExecutor::Execute", "model.0/Conv",
                                                   "model.77/Sigmoid", "Model/ReorderOutput"]
    assert events[0]["ts"] == 5_300.0 and events[2]["ts"] == 5_305.0  # 5 ms start + ts in microseconds


def test_runtime_events_merge_inside_the_forward_step():
    base_us = torch_like_trace()["baseTimeNanoseconds"] / 1000
    events = onnxruntime_events(ort_profile(), start_unix_ns=int((base_us + 205 - 300) * 1000), warmup_runs=1)
    trace_json, warnings = trace_for_viewers(json.dumps(torch_like_trace()), "detbench", 40, 40,
                                             RuntimeEvents("onnxruntime 1.0", events))
    trace = json.loads(trace_json)
    assert warnings == []
    runtime = [event for event in trace["traceEvents"] if event["ph"] == "X" and event["pid"] == 44]
    assert {event["tid"] for event in runtime} == {45}
    assert len(runtime) == 5 and runtime[0]["name"] == "model_run" and runtime[0]["ts"] == 205.0
    assert all(lies_within(event, complete_events(trace, "forward")) for event in runtime)
    assert metadata(trace, "process_name")[44] == "onnxruntime 1.0"
    assert metadata(trace, "thread_name")[(44, 45)] == "thread 9"
    assert len(complete_events(trace)) == 5 + 5


def test_runtime_events_that_miss_the_forward_are_left_out_with_a_warning():
    events = onnxruntime_events(ort_profile(), start_unix_ns=0, warmup_runs=1)  # a clock far from the trace's
    trace_json, warnings = trace_for_viewers(json.dumps(torch_like_trace()), "detbench", 40, 40,
                                             RuntimeEvents("onnxruntime 1.0", events))
    assert len(warnings) == 1 and "onnxruntime 1.0" in warnings[0] and "left out" in warnings[0]
    assert len(complete_events(json.loads(trace_json))) == 5


