"""pipelines/exported/layouts/yolonas.py: super-gradients' corners and scores before NMS."""
import torch

from pipelines.exported.layouts import yolonas
from pipelines.exported.layouts.contract import ASSUMED, NAMED, Misfit
from tests.support.exported_files import exported


def test_its_exporters_names_make_it_named_and_unnamed_rows_must_be_the_grid_cells():
    named = yolonas.read(exported([("pre_nms_scores", (1, 1000, 3)), ("pre_nms_bboxes_xyxy", (1, 1000, 4))]))
    assert (named.confidence, named.roles, named.classes) == (NAMED, {"boxes": 1, "scores": 0}, 3)
    assert yolonas.read(exported([("a", (1, 84, 4)), ("b", (1, 84, 3))])).confidence == ASSUMED
    assert isinstance(yolonas.read(exported([("a", (1, 85, 4)), ("b", (1, 85, 3))])), Misfit)


def test_raw_gives_centres_and_an_objectness_of_one():
    reading = yolonas.read(exported([("pre_nms_bboxes_xyxy", (1, 1, 4)), ("pre_nms_scores", (1, 1, 2))]))
    found = yolonas.raw((torch.tensor([[[2.0, 4.0, 12.0, 8.0]]]), torch.tensor([[[0.5, 0.25]]])), reading, 64, 64)
    assert found.tolist() == [[[7.0, 6.0, 10.0, 4.0, 1.0, 0.5, 0.25]]]
