"""pipelines/exported/layouts/paddle_nms.py: multiclass_nms3's rows and counts, in original pixels."""
import torch

from pipelines.exported.layouts import paddle_nms
from pipelines.exported.layouts.contract import Misfit
from tests.support.exported_files import exported

INPUTS = [("image", (1, 3, 64, 64)), ("scale_factor", (1, 2))]
OUTPUTS = [("multiclass_nms3_0.tmp_0", ("N", 6)), ("multiclass_nms3_0.tmp_2", (1,), "int32")]


def test_image_and_scale_factor_with_rows_and_counts_are_read_and_other_inputs_refused(tmp_path):
    reading = paddle_nms.read(exported(OUTPUTS, INPUTS, path=tmp_path / "model.onnx"))
    assert reading.classes == paddle_nms.CLASSES and reading.roles == {"detections": 0, "count": 1}
    assert dict(reading.extra_inputs) == {"scale_factor": "scale_yx"} and reading.recipe is None
    assert isinstance(paddle_nms.read(exported(OUTPUTS, [INPUTS[0], ("other", (1, 2))])), Misfit)


def test_raw_splits_rows_by_count_and_a_class_minus_one_row_never_passes(tmp_path):
    reading = paddle_nms.read(exported(OUTPUTS, INPUTS, path=tmp_path / "model.onnx"))
    detections = torch.tensor([[1, 0.8, 1, 2, 3, 4], [-1, 0.9, 0, 0, 0, 0], [0, 0.7, 5, 6, 7, 8]])
    found = paddle_nms.raw((detections, torch.tensor([2, 1])), reading, 64, 64)
    assert found.shape == (2, 2, 6)
    assert found[0].tolist()[0] == [1.0, 2.0, 3.0, 4.0, 0.800000011920929, 1.0]
    assert found[0, 1, 4] == -1.0 and found[0, 1, 5] == 0.0
    assert found[1, 0, :4].tolist() == [5.0, 6.0, 7.0, 8.0] and found[1, 1, 4] == -1.0  # padding
