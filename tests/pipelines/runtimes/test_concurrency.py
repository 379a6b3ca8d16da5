"""runtime.streams auto resolves to each runtime's own choice and says why; an OpenVINO run states what
OpenVINO would pick by itself on this CPU, and the console says how to run that choice."""
import openvino as ov
import pytest
import torch

from pipelines.runtimes.concurrency import AUTO_ONE_REQUEST, scenario_streams
from pipelines.runtimes.openvino.signal_stack import kept_signal_stack
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family as yolo
from tests.support.paths import ROOT
from utils.config.schema import ConfigError, load_config

CONFIG = ROOT / "configs" / "samples_tiny.yaml"


@pytest.fixture
def network():
    return yolo.load_network("yolov7-tiny", None, 0)


def test_config_takes_auto_in_any_scenario_and_refuses_other_words():
    assert load_config(CONFIG, ["runtime.streams=auto"]).runtime.streams == "auto"
    assert load_config(CONFIG, ["runtime.streams=auto", "benchmark.scenario=offline"]).runtime.streams == "auto"
    with pytest.raises(ConfigError, match="runtime.streams"):
        load_config(CONFIG, ["runtime.streams=many"])
    with pytest.raises(ConfigError, match="runtime.streams"):
        load_config(CONFIG, ["runtime.streams=0"])


def test_auto_in_single_stream_is_one_stream():
    assert scenario_streams("auto", "single_stream") == AUTO_ONE_REQUEST
    assert scenario_streams("auto", "offline") == "auto"
    assert scenario_streams(2, "offline") == 2


@pytest.mark.slow
@pytest.mark.parametrize("backend, why", [("torch", "torch has no streams of its own"),
                                          ("onnxruntime", "ONNX Runtime's own split")])
def test_runtimes_without_streams_resolve_auto_to_one_and_say_why(backend, why, network, tmp_path):
    options = {} if backend == "torch" else {"cache_dir": tmp_path}
    runtime = build_runtime(backend, threads=2, streams="auto", **options)
    runtime.prepare(network, torch.rand(1, 3, 64, 64))
    settings = runtime.settings()
    assert settings["streams"] == 1 and settings["threads"] == 2
    assert settings["streams_auto"]["asked"] == "auto" and settings["streams_auto"]["resolved"] == 1
    assert why in settings["streams_auto"]["why"]


@pytest.mark.slow
def test_openvino_auto_takes_the_throughput_hints_streams(network, tmp_path):
    runtime = build_runtime("openvino", threads=2, streams="auto", cache_dir=tmp_path)
    runtime.prepare(network, torch.rand(1, 3, 64, 64))
    settings = runtime.settings()
    with kept_signal_stack():  # Cores of the test's own, apart from the runtime's
        # Independently: the same file compiled by OpenVINO under the throughput hint with the same threads.
        compiled = ov.Core().compile_model(settings["onnx_file"], "CPU", {
            "PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_NUM_THREADS": 2, "INFERENCE_PRECISION_HINT": "f32"})
        expected = int(compiled.get_property("NUM_STREAMS"))
        # What OpenVINO picks with nothing given but the hint, read from a compiled model, as benchmark_app would.
        alone = ov.Core().compile_model(settings["onnx_file"], "CPU", {"PERFORMANCE_HINT": "THROUGHPUT"})
        picked = (int(alone.get_property("NUM_STREAMS")), int(alone.get_property("INFERENCE_NUM_THREADS")),
                  alone.get_property("INFERENCE_PRECISION_HINT").get_type_name())
        del compiled, alone
    assert settings["streams"] == settings["num_streams"] == settings["streams_auto"]["resolved"] == expected
    assert "throughput hint" in settings["streams_auto"]["why"]
    assert runtime.streams == expected  # what the scenario starts workers for
    defaults = settings["openvino_defaults"]
    assert (defaults["streams"], defaults["threads"], defaults["inference_precision"]) == picked


@pytest.mark.slow
def test_openvino_auto_in_single_stream_is_one(network, tmp_path):
    runtime = build_runtime("openvino", threads=2, streams=AUTO_ONE_REQUEST, cache_dir=tmp_path)
    runtime.prepare(network, torch.rand(1, 3, 64, 64))
    assert runtime.settings()["streams"] == 1
    assert "single_stream" in runtime.settings()["streams_auto"]["why"]
