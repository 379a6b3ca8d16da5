"""MediaPipe's SSD arithmetic (pipelines/exported/mediapipe_ssd.py) on hand-computed cases: the anchors of its
face detectors' graphs, the decode relative to an anchor, the clipped sigmoid and the weighted NMS."""
from __future__ import annotations

import math

import pytest
import torch

from pipelines.exported.mediapipe_ssd import (AnchorOptions, clipped_sigmoid, decode_boxes, iou_with, ssd_anchors,
                                              weighted_nms)


@pytest.mark.parametrize("side, strides, interpolated, count", [(128, (8, 16, 16, 16), 1.0, 896),
                                                                (256, (16, 32, 32, 32), 1.0, 896),
                                                                (192, (4,), 0.0, 2304)])
def test_the_face_detectors_anchor_counts(side, strides, interpolated, count):
    assert len(ssd_anchors(AnchorOptions(side, side, strides, interpolated_scale_aspect_ratio=interpolated))) == count


def test_short_range_anchors_two_per_cell_of_stride_8_then_six_per_cell_of_stride_16():
    anchors = ssd_anchors(AnchorOptions(128, 128, (8, 16, 16, 16)))
    assert anchors[0].tolist() == [0.03125, 0.03125, 1.0, 1.0] == anchors[1].tolist()
    assert anchors[2].tolist() == [0.09375, 0.03125, 1.0, 1.0]  # the next column
    assert anchors[32].tolist() == [0.03125, 0.09375, 1.0, 1.0]  # the next row (16 cells of 2)
    assert anchors[512].tolist() == [0.0625, 0.0625, 1.0, 1.0] == anchors[517].tolist()
    assert anchors[518].tolist() == [0.1875, 0.0625, 1.0, 1.0]


def test_anchor_sizes_follow_scales_and_aspect_ratios_where_not_fixed():
    anchors = ssd_anchors(AnchorOptions(64, 64, (32,), min_scale=0.2, max_scale=0.8, aspect_ratios=(1.0, 2.0),
                                        fixed_anchor_size=False))
    assert len(anchors) == 12  # 2 x 2 cells of 3: ratios 1 and 2 at scale 0.5, then sqrt(0.5 x 1) at ratio 1
    expected = [(0.25, 0.25, 0.5, 0.5), (0.25, 0.25, 0.5 * math.sqrt(2), 0.5 / math.sqrt(2)),
                (0.25, 0.25, math.sqrt(0.5), math.sqrt(0.5))]
    for row, values in zip(anchors[:3].tolist(), expected):
        assert row == pytest.approx(values, abs=1e-6)
    assert anchors[3].tolist()[:2] == [0.75, 0.25]


def test_a_box_and_its_keypoints_decode_from_their_anchor():
    raw = torch.tensor([[12.8, -6.4, 25.6, 12.8, 0.0, 0.0, 12.8, 12.8]])
    decoded = decode_boxes(raw, torch.tensor([[0.5, 0.5, 1.0, 1.0]]), (128.0, 128.0), (128.0, 128.0))
    assert decoded[0].tolist() == pytest.approx([0.5, 0.4, 0.7, 0.5, 0.5, 0.5, 0.6, 0.6], abs=1e-6)


def test_an_anchor_of_its_own_size_scales_the_offsets():
    raw = torch.tensor([[10.0, 10.0, 20.0, 40.0]])
    decoded = decode_boxes(raw, torch.tensor([[0.5, 0.5, 0.5, 0.25]]), (100.0, 100.0), (100.0, 100.0))
    # centre (0.5 + 0.1 x 0.5, 0.5 + 0.1 x 0.25) = (0.55, 0.525), size (0.2 x 0.5, 0.4 x 0.25) = (0.1, 0.1)
    assert decoded[0].tolist() == pytest.approx([0.5, 0.475, 0.6, 0.575], abs=1e-6)


def test_raw_scores_are_clipped_before_their_sigmoid():
    scores = clipped_sigmoid(torch.tensor([0.0, 200.0, -200.0]), 80.0)
    assert scores.tolist() == pytest.approx([0.5, 1 / (1 + math.exp(-80)), 1 / (1 + math.exp(80))])


def test_iou_is_zero_apart_and_for_a_box_without_area():
    boxes = torch.tensor([[1.0, 0.0, 11.0, 10.0], [10.0, 0.0, 20.0, 10.0], [5.0, 5.0, 5.0, 5.0]])
    assert iou_with(torch.tensor([0.0, 0.0, 10.0, 10.0]), boxes).tolist() == pytest.approx([90 / 110, 0.0, 0.0])


def test_overlapping_boxes_are_blended_by_score_and_keep_the_best_score():
    values = torch.tensor([[0.0, 0.0, 10.0, 10.0, 1.0, 1.0], [20.0, 20.0, 30.0, 30.0, 5.0, 5.0],
                           [1.0, 0.0, 11.0, 10.0, 4.0, 1.0]])
    blended, scores = weighted_nms(values, torch.tensor([0.9, 0.8, 0.6]), 0.3)
    assert scores.tolist() == pytest.approx([0.9, 0.8])
    # (0.9 x A + 0.6 x C) / 1.5, keypoints too; B alone stays as it is
    assert blended[0].tolist() == pytest.approx([0.4, 0.0, 10.4, 10.0, 2.2, 1.0])
    assert blended[1].tolist() == [20.0, 20.0, 30.0, 30.0, 5.0, 5.0]


def test_boxes_below_the_overlap_threshold_stay_apart():
    values = torch.tensor([[0.0, 0.0, 10.0, 10.0], [5.0, 0.0, 15.0, 10.0]])  # IoU 50 / 150
    blended, scores = weighted_nms(values, torch.tensor([0.7, 0.9]), 0.34)
    assert scores.tolist() == pytest.approx([0.9, 0.7]) and blended.tolist() == values[[1, 0]].tolist()
    blended, scores = weighted_nms(values, torch.tensor([0.7, 0.9]), 0.33)
    assert len(scores) == 1


def test_a_best_box_without_area_ends_the_suppression_as_mediapipe_does():
    values = torch.tensor([[0.0, 0.0, 10.0, 10.0], [5.0, 5.0, 5.0, 5.0]])
    blended, scores = weighted_nms(values, torch.tensor([0.9, 0.95]), 0.3)
    assert scores.tolist() == pytest.approx([0.95]) and blended.tolist() == [[5.0, 5.0, 5.0, 5.0]]


def test_no_candidates_give_no_rows():
    blended, scores = weighted_nms(torch.zeros((0, 4)), torch.zeros(0), 0.3)
    assert blended.shape == (0, 4) and scores.shape == (0,)
