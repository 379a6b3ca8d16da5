"""ONNX Runtime and OpenVINO: outputs equal torch eager fp32 on square, rect and other batch shapes; the
settings they report are read back; combinations they cannot run are refused with a way out. OpenVINO takes
the pixels themselves by default and converts them inside the compiled model."""
from __future__ import annotations

import copy
import json
import dataclasses
import threading

import openvino as ov
import pytest
import torch
from pydantic import ValidationError

from pipelines.runtimes.onnxruntime.session import OnnxRuntime
from pipelines.runtimes.openvino import session as openvino_runtime
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.registry import build_runtime
from utils.config.schema import config_for

SIZE = 128
THREADS = 2
SHAPES = [(2, 3, SIZE, SIZE), (1, 3, 96, 160), (3, 3, SIZE, SIZE)]  # square batch, rect, another batch size


@pytest.fixture(scope="module")
def example():
    return torch.zeros(1, 3, SIZE, SIZE)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def reference(network):
    module = copy.deepcopy(network.module)
    network.fuse(module)
    module.float().eval()

    def run(batch: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return module(batch)

    return run


@pytest.fixture(scope="module")
def onnxruntime(network, example, cache_dir):
    runtime = build_runtime("onnxruntime", threads=THREADS, cache_dir=cache_dir)
    return runtime, runtime.prepare(network, example)


@pytest.fixture(scope="module")
def openvino(network, example, cache_dir, onnxruntime):  # after onnxruntime: the export is cached then
    # Float batches, as torch eager takes them; the u8 input it runs by default is tested below.
    runtime = build_runtime("openvino", threads=THREADS, cache_dir=cache_dir, input_precision="f32")
    return runtime, runtime.prepare(network, example)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
@pytest.mark.parametrize("shape", SHAPES, ids=["square-b2", "rect-96x160", "square-b3"])
def test_fp32_output_equals_torch_eager(backend, shape, request, reference):
    runtime, forward = request.getfixturevalue(backend)
    batch = torch.rand(shape, generator=torch.Generator().manual_seed(1))
    expected = reference(batch)
    output = forward(batch)
    assert isinstance(output, torch.Tensor) and output.dtype == torch.float32
    assert output.shape == expected.shape
    scale = float(expected.abs().max())
    # float32 sums in another order: 1e-4 of the largest value (box sizes of hundreds of pixels) is well
    # under the half pixel the agreement check allows.
    assert float((output - expected).abs().max()) <= 1e-4 * scale


@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_an_output_holds_until_the_calling_threads_next_forward(backend, request):
    """An output may be the runtime's own buffer (OpenVINO's is not copied): another thread's forwards, with
    requests of their own, never touch it."""
    _, forward = request.getfixturevalue(backend)
    first = forward(torch.rand(1, 3, SIZE, SIZE))
    kept = first.clone()
    others = [threading.Thread(target=forward, args=(torch.rand(1, 3, SIZE, SIZE),)) for _ in range(2)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join()
    assert torch.equal(first, kept)


def test_onnxruntime_settings_are_read_back(onnxruntime):
    runtime, _ = onnxruntime
    settings = runtime.settings()
    assert settings["backend"] == "onnxruntime" and settings["precision"] == "fp32" and settings["fused"]
    assert settings["threads"] == THREADS and settings["inter_op_threads"] == 1
    assert settings["providers"] == ["CPUExecutionProvider"]
    assert settings["execution_mode"] == "ORT_SEQUENTIAL"
    assert settings["graph_optimization_level"] == "ORT_ENABLE_ALL"
    assert settings["allow_spinning"] is True  # ONNX Runtime's own default, left as it is
    assert settings["opset"] == 17 and settings["onnx_file"].endswith(".onnx")
    preparation = settings["preparation"]
    assert set(preparation) == {"export_s", "cache_hit", "session_s", "first_inference_ms"}
    assert preparation["cache_hit"] is False and preparation["export_s"] > 0
    assert preparation["first_inference_ms"] > 0


def test_an_onnxruntime_profile_lands_in_the_folder_given_and_the_normal_session_comes_back(onnxruntime, example,
                                                                                             tmp_path):
    runtime, forward = onnxruntime
    assert isinstance(runtime, OnnxRuntime)
    normal = runtime._session
    with runtime.profiling(tmp_path / "profile") as profile:
        forward(example)
    assert profile.path.parent == tmp_path / "profile" and profile.path.name.startswith("onnxruntime_profile")
    events = json.loads(profile.path.read_text())
    # The session's own warm-up run of the example, then the pass's forward: two model runs, same input shape.
    assert sum(event.get("name") == "model_run" for event in events) == 2
    assert profile.input_shapes == [tuple(example.shape)] * 2 and profile.start_ns > 0
    assert runtime._session is normal


def test_openvino_settings_are_read_back(openvino, onnxruntime):
    runtime, _ = openvino
    settings = runtime.settings()
    assert settings["backend"] == "openvino" and settings["precision"] == "fp32"
    assert settings["inference_precision_hint"] == "f32"
    assert settings["performance_hint"] == "LATENCY"
    assert settings["num_streams"] == 1 and settings["threads"] == THREADS
    assert settings["execution_devices"] == ["CPU"]
    assert "FP32" in settings["optimization_capabilities"]
    assert settings["openvino_version"] == ov.get_version()
    assert settings["onnx_file"] == onnxruntime[0].settings()["onnx_file"]
    preparation = settings["preparation"]
    assert set(preparation) == {"export_s", "cache_hit", "compile_s", "first_inference_ms"}
    assert preparation["cache_hit"] is True and preparation["export_s"] == 0.0
    # The example's shape ran on a model compiled with that shape fixed, not on the dynamic one.
    assert [1, 3, SIZE, SIZE] in settings["static_shapes"] and settings["dynamic_shape_inferences"] == 0


@pytest.mark.slow
def test_openvino_bf16_runs_and_says_so(network, example, cache_dir, openvino):
    capabilities = build_runtime("openvino").capabilities
    if "BF16" not in capabilities:
        pytest.skip(f"this CPU has no bf16 in OpenVINO's CPU plugin (capabilities: {', '.join(capabilities)})")
    runtime = build_runtime("openvino", precision="bf16", threads=THREADS, cache_dir=cache_dir, input_precision="f32")
    forward = runtime.prepare(network, example)
    for shape in SHAPES[:2]:
        output = forward(torch.rand(shape))
        # bf16 on random weights may move boxes far (environment notes): only shape and sanity here.
        assert output.dtype == torch.float32 and output.shape[0] == shape[0] and torch.isfinite(output).all()
    settings = runtime.settings()
    assert settings["precision"] == "bf16" and settings["inference_precision_hint"] == "bf16"


def test_onnxruntime_refuses_bf16_and_names_the_alternatives():
    with pytest.raises(RuntimeNotSupported, match="fp32 and int8 only.*openvino or torch for bf16"):
        build_runtime("onnxruntime", precision="bf16")


def test_onnxruntime_takes_its_graph_optimization_level_from_the_config(network, example, cache_dir, onnxruntime,
                                                                       reference):
    config = config_for("yolov7-tiny", runtime={"backend": "onnxruntime", "graph_optimization": "basic"})
    runtime = build_runtime("onnxruntime", threads=THREADS, cache_dir=cache_dir,
                            graph_optimization=config.runtime.graph_optimization)
    batch = torch.rand(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1))
    output = runtime.prepare(network, example)(batch)
    assert runtime.settings()["graph_optimization_level"] == "ORT_ENABLE_BASIC"
    assert torch.allclose(torch.as_tensor(output), reference(batch), atol=1e-3, rtol=1e-3)
    with pytest.raises(ValidationError, match="graph_optimization"):
        config_for("yolov7-tiny", runtime={"backend": "torch", "graph_optimization": "basic"})


def test_onnxruntime_spinning_is_its_own_default_and_a_key_turns_it_off(network, example, cache_dir, onnxruntime):
    default = onnxruntime[0]._session.get_session_options()
    # Left unset: what ONNX Runtime does by itself (spinning), not a value detbench picks.
    with pytest.raises(RuntimeError, match="does not have configuration"):
        default.get_session_config_entry("session.intra_op.allow_spinning")
    config = config_for("yolov7-tiny", runtime={"backend": "onnxruntime", "spinning": False})
    runtime = build_runtime("onnxruntime", threads=THREADS, cache_dir=cache_dir, spinning=config.runtime.spinning)
    runtime.prepare(network, example)
    assert runtime._session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert runtime.settings()["allow_spinning"] is False
    with pytest.raises(ValidationError, match="spinning"):
        config_for("yolov7-tiny", runtime={"backend": "torch", "spinning": False})


def test_onnxruntime_refuses_an_unknown_graph_optimization():
    with pytest.raises(RuntimeNotSupported, match="'most' is not one of disabled, basic, extended, layout, all"):
        build_runtime("onnxruntime", graph_optimization="most")


def test_int8_without_calibration_images_is_refused():
    for backend in ("openvino", "onnxruntime"):
        with pytest.raises(RuntimeNotSupported, match=r"int8 needs calibration images \(runtime.calibration\)"):
            build_runtime(backend, precision="int8")


def test_openvino_refuses_bf16_on_a_cpu_without_it(monkeypatch):
    class CoreWithoutBf16:
        def get_property(self, device, key):
            return ["FP32", "INT8", "EXPORT_IMPORT"]

    monkeypatch.setattr(openvino_runtime, "shared_core", CoreWithoutBf16)
    with pytest.raises(RuntimeNotSupported, match="offers FP32, INT8, EXPORT_IMPORT on this CPU, not BF16"):
        build_runtime("openvino", precision="bf16")


@pytest.mark.slow
def test_openvino_takes_pixels_by_default_and_converts_them_as_the_pipeline_would(network, example, cache_dir,
                                                                                  openvino, reference):
    runtime = build_runtime("openvino", threads=THREADS, cache_dir=cache_dir)
    forward = runtime.prepare(network, example)
    assert forward.input_dtype == torch.uint8
    settings = runtime.settings()
    assert settings["input_precision"] == "u8"
    assert settings["input_conversion"]["conversion"] == "f32, divided by 255, inside the compiled model"
    assert "benchmark_app" in settings["input_conversion"]["why"]
    for shape in SHAPES:
        pixels = torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
        expected = reference(pixels.float().div_(255.0))
        output = forward(pixels)
        assert output.dtype == torch.float32 and output.shape == expected.shape
        # As close to torch eager on the converted floats as the f32 input is (the test above).
        assert float((output - expected).abs().max()) <= 1e-4 * float(expected.abs().max())
    with pytest.raises(TypeError, match="takes uint8 pixels"):
        forward(torch.rand(SHAPES[0]))


def test_openvino_input_of_a_network_that_is_not_scaled_pixels(network, example, cache_dir, openvino):
    with pytest.raises(RuntimeNotSupported, match="runtime.input_precision is one of auto, u8, f32, not 'f16'"):
        build_runtime("openvino", input_precision="f16")
    unscaled = dataclasses.replace(network, pixel_scale=None)
    with pytest.raises(RuntimeNotSupported, match="runtime.input_precision u8: this network's input is not scaled "
                                                  "pixels.*use runtime.input_precision f32"):
        build_runtime("openvino", threads=THREADS, cache_dir=cache_dir, input_precision="u8").prepare(unscaled, example)
    runtime = build_runtime("openvino", threads=THREADS, cache_dir=cache_dir)
    forward = runtime.prepare(unscaled, example)
    assert forward.input_dtype == torch.float32 and forward(torch.rand(SHAPES[1])).shape[0] == 1
    assert runtime.settings()["input_precision"] == "f32"
    assert runtime.settings()["input_conversion"] == {"why": "the network's input is not scaled pixels"}
