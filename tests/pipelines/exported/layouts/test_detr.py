"""pipelines/exported/layouts/detr.py: RF-DETR's boxes and logits, COCO's 91 slots mapped to its 80 classes."""
import pytest
import torch

from pipelines.exported.decoding import PAD_SCORE
from pipelines.exported.layouts import detr
from pipelines.exported.layouts.contract import Misfit
from tests.support.exported_files import exported


def test_91_slots_without_names_are_cocos_ids_and_one_slot_more_than_the_names_is_the_background():
    coco = detr.read(exported([("dets", (1, 50, 4)), ("labels", (1, 50, 91))]))
    assert coco.classes == 80 and coco.class_ids[1] == 0 and coco.class_ids[12] == -1  # id 12 is unused
    background = detr.read(exported([("a", (1, 50, 4)), ("b", (1, 50, 3))], metadata={"names": {0: "x", 1: "y"}}))
    assert (background.classes, list(background.class_ids)) == (2, [0, 1, -1])
    assert background.roles == {"boxes": 0, "logits": 1}
    assert isinstance(detr.read(exported([("logits", (1, 50, 3)), ("pred_boxes", (1, 50, 4))])), Misfit)  # hf_detr


def test_raw_maps_slots_to_classes_and_a_slot_naming_no_class_never_passes():
    reading = detr.read(exported([("dets", (1, 2, 4)), ("labels", (1, 2, 91))]))
    boxes, logits = torch.tensor([[[0.25, 0.25, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0]]]), torch.full((1, 2, 91), -20.0)
    logits[0, 0, 3] = 2.0  # COCO id 3, car: the third class
    logits[0, 1, 12] = 5.0  # an unused id
    found = detr.raw((boxes, logits), reading, 64, 64)[0]
    assert found[0, 4] == PAD_SCORE  # the best pair is the unused id's: padded away
    assert found[1].tolist() == pytest.approx([0, 0, 32, 32, float(torch.sigmoid(torch.tensor(2.0))), 2])
