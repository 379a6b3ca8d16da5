"""LiteRT's runtime (pipelines/runtimes/litert/session.py) on small .tflite files written here: the file's outputs
as the graph computes them, integer outputs dequantized, a free batch axis resized to the batch, XNNPACK on or
off as read back, and what it refuses."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipelines.exported.family import load_network
from pipelines.runtimes.base import RuntimeNotSupported, RuntimeSettings
from pipelines.runtimes.litert.session import LiteRtRuntime
from pipelines.runtimes.litert.spec import LiteRtOptions
from pipelines.runtimes.registry import build_runtime
from tests.support.tflite_models import shifted_outputs

BASE = np.arange(6 * 10, dtype=np.float32).reshape(1, 6, 10) / 100


def prepared(file, threads=1, **options):
    runtime = build_runtime("litert", threads=threads, **options)
    network = load_network(str(file), None, 0)
    return runtime, runtime.prepare(network, torch.zeros(1, 3, 16, 16))


def test_the_files_outputs_come_back_as_the_graph_computes_them(tmp_path):
    file = shifted_outputs(tmp_path / "y.tflite", [BASE], ["Identity"], (1, 16, 16, 3), gain=2.0)
    runtime, forward = prepared(file)
    output = forward(torch.full((1, 16, 16, 3), 0.25))
    assert output.dtype == torch.float32 and output.shape == (1, 6, 10)
    torch.testing.assert_close(output, torch.from_numpy(BASE) + 0.5)
    settings = runtime.settings()
    assert settings["backend"] == "litert" and settings["threads"] == 1 and settings["streams"] == 1
    assert settings["batches"] == "the file's own fixed input shape"
    assert settings["input"] == {"name": "images", "shape": [1, 16, 16, 3], "dtype": "float32"}
    assert settings["file_precision"]["weights"] == "float32" and settings["file_precision"]["input"] == "float32"
    runtime.close()


def test_an_int8_output_is_dequantized_with_its_own_scale_and_zero_point(tmp_path):
    file = shifted_outputs(tmp_path / "q.tflite", [BASE], ["out"], (1, 16, 16, 3), output_quantization=(0.01, -5))
    _, forward = prepared(file)
    output = forward(torch.zeros(1, 16, 16, 3))
    assert output.dtype == torch.float32
    torch.testing.assert_close(output, torch.from_numpy(BASE), atol=0.005, rtol=0)


def test_a_uint8_input_takes_the_pixels_and_the_file_dequantizes_them(tmp_path):
    file = shifted_outputs(tmp_path / "u.tflite", [np.zeros((1, 6, 10))], ["out"], (1, 16, 16, 3), "uint8",
                           (0.5, 10), gain=1.0)
    runtime, forward = prepared(file)
    assert forward.input_dtype == torch.float32  # the pipeline hands over the file's own type (uint8 here)
    output = forward(torch.full((1, 16, 16, 3), 14, dtype=torch.uint8))
    torch.testing.assert_close(output, torch.full((1, 6, 10), 2.0))  # (14 - 10) x 0.5
    assert runtime.settings()["file_precision"]["input_quantization"] == {"scale": 0.5, "zero_point": 10}


def test_a_free_batch_axis_is_resized_to_each_batch(tmp_path):
    file = shifted_outputs(tmp_path / "d.tflite", [BASE], ["out"], (1, 16, 16, 3), gain=1.0,
                           signature=(-1, 16, 16, 3))
    runtime, forward = prepared(file)
    batch = torch.stack([torch.full((16, 16, 3), value) for value in (0.0, 1.0, 2.0)])
    output = forward(batch)
    assert output.shape == (3, 6, 10)
    torch.testing.assert_close(output[2], torch.from_numpy(BASE[0]) + 2.0)
    assert forward(batch[:1]).shape == (1, 6, 10)
    settings = runtime.settings()
    assert settings["resized_inputs"] == 2 and settings["batches"].startswith("resized to each batch's shape")


@pytest.mark.parametrize("xnnpack", [True, False])
def test_xnnpack_on_or_off_is_read_back_from_the_interpreter(tmp_path, xnnpack):
    file = shifted_outputs(tmp_path / "x.tflite", [BASE], ["out"], (1, 16, 16, 3), gain=1.0)
    runtime, forward = prepared(file, xnnpack=xnnpack)
    torch.testing.assert_close(forward(torch.ones(1, 16, 16, 3)), torch.from_numpy(BASE) + 1.0)
    settings = runtime.settings()
    assert settings["xnnpack"] is xnnpack and (settings["delegate_nodes"] > 0) is xnnpack
    assert ("no XNNPACK" in settings["op_resolver"]) is not xnnpack


def test_two_streams_run_an_interpreter_each(tmp_path):
    file = shifted_outputs(tmp_path / "s.tflite", [BASE], ["out"], (1, 16, 16, 3), gain=1.0)
    runtime = LiteRtRuntime(RuntimeSettings(threads=2, streams=2), LiteRtOptions())
    forward = runtime.prepare(load_network(str(file), None, 0), torch.zeros(1, 3, 16, 16))
    assert forward(torch.zeros(1, 16, 16, 3)).shape == (1, 6, 10)
    assert runtime.settings()["streams"] == 2 and runtime.settings()["threads_per_stream"] == 1


def test_what_it_cannot_do_is_refused_with_the_reason(tmp_path):
    with pytest.raises(RuntimeNotSupported, match="does not quantize one: quantize the model with onnx2tf"):
        LiteRtRuntime(RuntimeSettings(precision="int8"), LiteRtOptions())
    with pytest.raises(RuntimeNotSupported, match="runtime.pinning"):
        LiteRtRuntime(RuntimeSettings(pinning=True), LiteRtOptions())
    from pipelines.contract import LoadedNetwork
    with pytest.raises(RuntimeNotSupported, match="runs a .tflite file given as model.file"):
        LiteRtRuntime().prepare(LoadedNetwork(None, [], "", False, "x"), torch.zeros(1, 3, 16, 16))
