"""OpenVINO's session (pipelines/runtimes/openvino/session.py): outputs equal torch eager fp32 on square, rect and
other batch shapes; the settings it reports are read back; bf16 where the CPU has it, refused where not; it takes the
pixels themselves by default and converts them inside the compiled model."""
from __future__ import annotations

import dataclasses

import openvino as ov
import pytest
import torch

from pipelines.runtimes.openvino import session as openvino_runtime
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.registry import build_runtime
from tests.support.exported_runtimes import (SHAPE_IDS, SHAPES, SIZE, THREADS,
                                             assert_an_output_holds_until_the_calling_threads_next_forward,
                                             assert_fp32_output_equals_torch_eager)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_fp32_output_equals_torch_eager(shape, openvino, reference):
    assert_fp32_output_equals_torch_eager(openvino[1], reference, shape)


def test_an_output_holds_until_the_calling_threads_next_forward(openvino):
    assert_an_output_holds_until_the_calling_threads_next_forward(openvino[1])


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


def test_int8_without_calibration_images_is_refused():
    with pytest.raises(RuntimeNotSupported, match=r"int8 needs calibration images \(runtime.calibration\)"):
        build_runtime("openvino", precision="int8")


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
