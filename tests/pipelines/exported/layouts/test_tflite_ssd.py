"""The TF OD API SSD layout (pipelines/exported/layouts/tflite_ssd.py): its outputs told apart by which of
TFLite_Detection_PostProcess's outputs each is, COCO's 90 ids mapped to the 80 classes, rows past the count
dropped, and the operator's work done here (a runtime without it) equal to LiteRT's kernel."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from ai_edge_litert.interpreter import Interpreter

from pipelines.exported.inspection import read_exported
from pipelines.exported.layouts import read_layout, tflite_ssd
from pipelines.exported.layouts.contract import COCO_IDS, Misfit
from tests.support.tflite_models import shifted_outputs, ssd_file

ANCHORS = np.array([[0.5, 0.5, 0.2, 0.2], [0.25, 0.25, 0.5, 0.5], [0.75, 0.75, 0.3, 0.4]], np.float32)
ENCODINGS = np.array([[0, 0, 0, 0], [1.0, -1.0, 0.5, 0.0], [0, 0, 0, 0]], np.float32)


def coco_logits() -> np.ndarray:
    """Anchor 0: class 0 (person, id 1); anchor 1: class 2 (car, id 3); anchor 2: class 11 (id 12, unused)."""
    logits = np.full((3, 91), -8.0, np.float32)
    logits[0, 1], logits[1, 3], logits[2, 12] = 2.0, 1.0, 0.5
    return logits


def outputs_of(file, image: np.ndarray) -> tuple[torch.Tensor, ...]:
    interpreter = Interpreter(model_path=str(file))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], image)
    interpreter.invoke()
    return tuple(torch.from_numpy(interpreter.get_tensor(d["index"])) for d in interpreter.get_output_details())


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (2, 0, 3, 1)])
def test_outputs_are_told_by_the_operator_whatever_their_order(tmp_path, order):
    file = ssd_file(tmp_path / "ssd.tflite", ENCODINGS, coco_logits(), ANCHORS, (1, 8, 8, 3), output_order=order)
    reading = read_layout(read_exported(file))
    assert reading.layout == "tflite_ssd" and reading.classes == 80
    assert [reading.roles[role] for role in tflite_ssd.ROLES] == [order.index(slot) for slot in range(4)]
    assert reading.class_ids[0] == 0 and reading.class_ids[2] == 2 and reading.class_ids[11] == -1
    assert reading.class_ids[89] == COCO_IDS.index(90)


def test_rows_are_boxes_in_input_pixels_with_coco_classes_and_no_rows_past_the_count(tmp_path):
    file = ssd_file(tmp_path / "ssd.tflite", ENCODINGS, coco_logits(), ANCHORS, (1, 8, 8, 3), output_order=(2, 0, 3, 1))
    reading = read_layout(read_exported(file))
    rows = tflite_ssd.raw(outputs_of(file, np.full((1, 8, 8, 3), 128, np.uint8)), reading, 300, 400)
    assert rows.shape == (1, 10, 6) and not torch.isnan(rows).any()
    first = rows[0, 0].tolist()  # anchor 0: y 0.4-0.6, x 0.4-0.6 of a 300 x 400 input, person
    assert first[:4] == pytest.approx([160.0, 120.0, 240.0, 180.0], abs=1e-3)
    assert first[4] == pytest.approx(1 / (1 + math.exp(-2))) and first[5] == 0
    assert rows[0, 1, 5] == 2 and rows[0, 1, 4] == pytest.approx(1 / (1 + math.exp(-1)))
    assert (rows[0, 2:, 4] == -1).all()  # the unused id 12, then the rows past the count of 3


def test_another_class_count_keeps_its_numbers(tmp_path):
    logits = np.full((3, 4), -8.0, np.float32)
    logits[0, 3] = 3.0
    file = ssd_file(tmp_path / "ssd.tflite", ENCODINGS, logits, ANCHORS, (1, 8, 8, 3))
    reading = read_layout(read_exported(file))
    assert reading.classes == 3 and reading.class_ids is None
    rows = tflite_ssd.raw(outputs_of(file, np.zeros((1, 8, 8, 3), np.uint8)), reading, 8, 8)
    assert rows[0, 0, 5] == 2


def test_the_operators_work_done_here_equals_litert_kernel(tmp_path):
    generator = np.random.default_rng(3)
    anchors = np.concatenate([generator.uniform(0.1, 0.9, (40, 2)), generator.uniform(0.05, 0.3, (40, 2))],
                             axis=1).astype(np.float32)
    logits = generator.normal(-2, 2, (40, 91)).astype(np.float32)
    encodings = generator.normal(0, 1, (40, 4)).astype(np.float32)
    file = ssd_file(tmp_path / "ssd.tflite", encodings, logits, anchors, (1, 8, 8, 3), "float32", None, gain=0.5)
    reading = read_layout(read_exported(file))
    image = np.full((1, 8, 8, 3), 0.4, np.float32)  # shifts every encoding and logit by 0.2
    whole = tflite_ssd.raw(outputs_of(file, image), reading, 320, 320)
    shifted = (torch.from_numpy(encodings + 0.2)[None], torch.sigmoid(torch.from_numpy(logits + 0.2))[None])
    here = tflite_ssd.raw(shifted, reading, 320, 320)
    assert (whole[..., 4] > 0).sum() > 3
    torch.testing.assert_close(here, whole, atol=1e-4, rtol=1e-5)


def test_a_file_without_the_operator_is_not_this_layout(tmp_path):
    file = shifted_outputs(tmp_path / "y.tflite", [np.zeros((1, 6, 10))], ["out"], (1, 8, 8, 3))
    assert isinstance(tflite_ssd.read(read_exported(file)), Misfit)
