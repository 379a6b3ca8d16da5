"""pipelines/exported/layouts/ppyoloe.py: boxes (B, N, 4) in original pixels and channels-first scores."""
import torch

from pipelines.exported.layouts import ppyoloe
from pipelines.exported.layouts.contract import Misfit
from tests.support.exported_files import exported

INPUTS = [("image", (1, 3, 64, 64)), ("scale_factor", (1, 2))]


def test_boxes_and_scores_over_the_same_rows_are_read_in_either_order(tmp_path):
    reading = ppyoloe.read(exported([("scores", (1, 3, 84)), ("boxes", (1, 84, 4))], INPUTS,
                                    path=tmp_path / "model.onnx"))
    assert reading.roles == {"boxes": 1, "scores": 0} and reading.classes == 3
    assert isinstance(ppyoloe.read(exported([("scores", (1, 3, 80)), ("boxes", (1, 84, 4))], INPUTS)), Misfit)
    assert isinstance(ppyoloe.read(exported([("scores", (1, 3, 84)), ("boxes", (1, 84, 4))], INPUTS[:1])), Misfit)


def test_raw_turns_corners_into_centres_and_scores_into_rows(tmp_path):
    reading = ppyoloe.read(exported([("boxes", (1, 1, 4)), ("scores", (1, 2, 1))], INPUTS,
                                    path=tmp_path / "model.onnx"))
    found = ppyoloe.raw((torch.tensor([[[0.0, 10.0, 20.0, 30.0]]]), torch.tensor([[[0.25], [0.75]]])), reading, 64, 64)
    assert found.tolist() == [[[10.0, 20.0, 20.0, 20.0, 1.0, 0.25, 0.75]]]
