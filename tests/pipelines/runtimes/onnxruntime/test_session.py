"""ONNX Runtime's session (pipelines/runtimes/onnxruntime/session.py): outputs equal torch eager fp32 on square, rect
and other batch shapes; the settings it reports are read back, with its own keys (graph optimization, spinning); a
profile lands where asked; what it cannot run is refused with a way out."""
from __future__ import annotations

import json

import pytest
import torch
from pydantic import ValidationError

from pipelines.runtimes.onnxruntime.session import OnnxRuntime
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.registry import build_runtime
from tests.support.exported_runtimes import (SHAPE_IDS, SHAPES, SIZE, THREADS,
                                             assert_an_output_holds_until_the_calling_threads_next_forward,
                                             assert_fp32_output_equals_torch_eager)
from utils.config.schema import config_for


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_fp32_output_equals_torch_eager(shape, onnxruntime, reference):
    assert_fp32_output_equals_torch_eager(onnxruntime[1], reference, shape)


def test_an_output_holds_until_the_calling_threads_next_forward(onnxruntime):
    assert_an_output_holds_until_the_calling_threads_next_forward(onnxruntime[1])


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
    with pytest.raises(RuntimeNotSupported, match=r"int8 needs calibration images \(runtime.calibration\)"):
        build_runtime("onnxruntime", precision="int8")
