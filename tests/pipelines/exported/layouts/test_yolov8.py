"""pipelines/exported/layouts/yolov8.py: one (B, 4 + C, N) output, channels before anchors, ONNX or IR only."""
import torch

from pipelines.exported.layouts import yolov8
from pipelines.exported.layouts.contract import Misfit
from tests.support.exported_files import exported


def test_channels_before_more_anchors_are_read_and_a_tflite_file_is_left_to_yolov8_tflite():
    assert yolov8.read(exported([("output0", (1, 6, 100))])).classes == 2
    assert isinstance(yolov8.read(exported([("output0", (1, 100, 6))])), Misfit)  # rows first: not this layout
    assert isinstance(yolov8.read(exported([("output0", (1, 6, 100))], format="tflite")), Misfit)


def test_raw_and_passing_rows_agree_and_gain_an_objectness_of_one():
    out = torch.tensor([[[10.0, 20.0], [11.0, 21.0], [4.0, 6.0], [5.0, 7.0], [0.9, 0.1], [0.2, 0.15]]])
    rows = yolov8.raw((out,), None, 64, 64)
    assert rows.shape == (1, 2, 7) and rows[0, :, 4].tolist() == [1.0, 1.0]
    passing = yolov8.passing((out,), None, 64, 64, 0.5)
    assert torch.equal(passing[0], rows[0, :1])  # only the first row's best class is above 0.5
