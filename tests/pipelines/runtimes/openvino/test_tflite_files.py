"""OpenVINO running a .tflite given as model.file (its TFLite frontend): channels-last input fed as the file takes
it (float32, uint8, int8), and a graph ending in TFLite_Detection_PostProcess, which OpenVINO lacks, run up to
that operator's inputs from a cached copy (pipelines/runtimes/tflite_tail.py), the user's file left as it was."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipelines.exported.family import load_network
from pipelines.runtimes.registry import build_runtime
from tests.support.tflite_models import shifted_outputs, ssd_file

BASE = np.arange(6 * 10, dtype=np.float32).reshape(1, 6, 10) / 100


def prepared(file, tmp_path):
    runtime = build_runtime("openvino", threads=1, cache_dir=tmp_path / "cache")
    return runtime, runtime.prepare(load_network(str(file), None, 0), torch.zeros(1, 3, 16, 16))


@pytest.mark.parametrize("dtype, quantization, fed, expected", [
    # A float input of pixels over 255 (the layout's recipe): OpenVINO takes the uint8 pixels and converts them.
    ("float32", None, torch.full((1, 16, 16, 3), 51, dtype=torch.uint8), 0.4),
    ("uint8", (0.5, 10), torch.full((1, 16, 16, 3), 14, dtype=torch.uint8), 4.0),
    ("int8", (0.5, -3), torch.full((1, 16, 16, 3), 1, dtype=torch.int8), 4.0),
])
def test_a_channels_last_file_is_fed_as_it_takes_its_input(tmp_path, dtype, quantization, fed, expected):
    file = shifted_outputs(tmp_path / "y.tflite", [BASE], ["Identity"], (1, 16, 16, 3), dtype, quantization, gain=2.0)
    runtime, forward = prepared(file, tmp_path)
    assert forward.input_dtype == (torch.uint8 if dtype == "float32" else torch.float32)
    output = forward(fed)
    torch.testing.assert_close(output, torch.from_numpy(BASE) + expected)
    settings = runtime.settings()
    assert settings["file_precision"]["input"] == dtype and settings["ends_before"] is None
    runtime.close()


def test_a_graph_ending_in_the_postprocess_operator_runs_up_to_its_inputs(tmp_path):
    anchors = np.array([[0.5, 0.5, 0.2, 0.2], [0.25, 0.25, 0.5, 0.5]], np.float32)
    encodings = np.array([[0, 0, 0, 0], [1.0, -1.0, 0.5, 0.0]], np.float32)
    logits = np.array([[0, 2.0, -5, -5], [0, -5, 1.0, -5]], np.float32)
    file = ssd_file(tmp_path / "ssd.tflite", encodings, logits, anchors, (1, 16, 16, 3))
    before = file.read_bytes()
    runtime, forward = prepared(file, tmp_path)
    boxes, scores = forward(torch.full((1, 16, 16, 3), 128, dtype=torch.uint8))
    torch.testing.assert_close(boxes, torch.from_numpy(encodings)[None])
    torch.testing.assert_close(scores, torch.sigmoid(torch.from_numpy(logits))[None])
    ends = runtime.settings()["ends_before"]
    assert ends["operator"] == "TFLite_Detection_PostProcess"
    assert ends["outputs"] == ["raw_outputs/box_encodings", "raw_outputs/class_predictions"]
    assert file.read_bytes() == before and list((tmp_path / "cache").glob("*.tflite"))


def test_openvino_still_lacks_the_postprocess_operator(tmp_path):
    """What the spec's lacks_operators states: when OpenVINO's TFLite frontend gains the operator, this fails and
    the spec can drop it."""
    from pipelines.runtimes.openvino.signal_stack import shared_core
    from pipelines.runtimes.openvino.spec import SPEC
    file = ssd_file(tmp_path / "ssd.tflite", np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32),
                    np.array([[0.5, 0.5, 0.2, 0.2]] * 2, np.float32), (1, 16, 16, 3))
    with pytest.raises(Exception, match="No translator found for TFLite_Detection_PostProcess"):
        shared_core().read_model(str(file))
    assert SPEC.lacks_operators == ("TFLite_Detection_PostProcess",)
