"""ONNX Runtime's own events of the profiled batch (pipelines/runtimes/onnxruntime/trace.py): nodes named by module
path with the ONNX name kept, only the batch's runs, and the session's profile read as a NativeTrace."""
import json
from types import SimpleNamespace

from pipelines.runtimes.onnxruntime.trace import read_trace, readable_node, trace_events
from tests.support.onnxruntime_profiles import ort_profile
from utils.measure.layers.runtime_trace import batch_events


def onnxruntime_events(profile_events: list[dict], warmup_runs: int) -> tuple[dict, ...]:
    """ONNX Runtime's trace reader's events, then the batch's among them."""
    return batch_events(trace_events(profile_events), warmup_runs)


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


def test_the_profile_the_session_left_is_read_as_its_own_process(tmp_path):
    path = tmp_path / "onnxruntime_profile.json"
    path.write_text(json.dumps(ort_profile()))
    runtime = SimpleNamespace(settings=lambda: {"onnxruntime_version": "1.31.0"})
    trace = read_trace(runtime, SimpleNamespace(path=str(path), warmup_runs=1, start_ns=123))
    assert trace.process_name == "onnxruntime 1.31.0" and (trace.warmup_runs, trace.start_ns) == (1, 123)
    assert [event["name"] for event in trace.events] == [
        "session_initialization", "model_run", "model.0.conv/Conv", "model_run", "SequentialExecutor::Execute",
        "model.0/Conv", "model.77/Sigmoid", "Model/ReorderOutput"]
    unnamed = read_trace(SimpleNamespace(settings=dict), SimpleNamespace(path=path, warmup_runs=0, start_ns=0))
    assert unnamed.process_name == "onnxruntime"
