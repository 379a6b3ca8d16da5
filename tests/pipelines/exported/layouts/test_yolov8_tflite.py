"""YOLOv8-style TFLite files (pipelines/exported/layouts/yolov8_tflite.py): read for TFLite files only (an ONNX
export stays yolov8), boxes normalised or in pixels told by the anchor centres' range."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipelines.exported.inspection import read_exported
from pipelines.exported.layouts import read_layout, yolov8, yolov8_tflite
from pipelines.exported.layouts.contract import Misfit
from tests.support.tflite_models import shifted_outputs


def output(scale: float) -> torch.Tensor:
    """(1, 6, 3): centres at a quarter, half and most of the input, 2 classes; in pixels of a 320 input when scale
    is 320, normalised when 1."""
    values = torch.zeros(1, 6, 3)
    values[0, 0] = torch.tensor([0.25, 0.5, 0.9]) * scale
    values[0, 1] = torch.tensor([0.25, 0.5, 0.9]) * scale
    values[0, 2:4] = 0.1 * scale
    values[0, 4] = torch.tensor([0.9, 0.1, 0.2])
    return values


def test_a_tflite_file_is_this_layout_and_an_onnx_one_is_not(tmp_path):
    file = shifted_outputs(tmp_path / "y.tflite", [np.zeros((1, 6, 100))], ["Identity"], (1, 32, 32, 3),
                           metadata='{"names": {"0": "a", "1": "b"}, "task": "detect"}')
    exported = read_exported(file)
    reading = read_layout(exported)
    assert reading.layout == "yolov8_tflite" and reading.classes == 2 and "Ultralytics" in reading.why
    assert isinstance(yolov8.read(exported), Misfit)


@pytest.mark.parametrize("scale", [1.0, 320.0])
def test_normalised_and_pixel_boxes_both_come_out_in_pixels(tmp_path, scale):
    rows = yolov8_tflite.raw((output(scale),), None, 320, 320)
    assert rows.shape == (1, 3, 7)
    assert rows[0, 0, :4].tolist() == pytest.approx([80.0, 80.0, 32.0, 32.0], abs=1e-4)
    assert rows[0, :, 4].tolist() == [1.0, 1.0, 1.0] and rows[0, 0, 5] == pytest.approx(0.9)
    passing = yolov8_tflite.passing((output(scale),), None, 320, 320, 0.5)
    assert len(passing[0]) == 1 and passing[0][0].tolist() == pytest.approx(rows[0, 0].tolist())


def test_normalised_boxes_scale_axis_by_axis_on_a_non_square_input():
    rows = yolov8_tflite.raw((output(1.0),), None, 240, 320)
    assert rows[0, 1, :4].tolist() == pytest.approx([160.0, 120.0, 32.0, 24.0], abs=1e-4)
