"""pipelines/exported/decoding.py: the layouts' arithmetic on hand-made tensors, against hand-computed rows."""
import pytest
import torch

from pipelines.boxes.nms import NmsSettings, non_max_suppression
from pipelines.exported.decoding import (cut_rows, distances_to_xyxy, distribution_distances, grid_points,
                                         normalised_cxcywh_to_xyxy, padded, top_pairs, yolov8_as_yolov5,
                                         yolov8_rows_passing)
from pipelines.settings import NO_CAP


def test_channels_first_rows_gain_an_objectness_of_one():
    raw = torch.tensor([[[10.0, 20.0], [11.0, 21.0], [4.0, 6.0], [5.0, 7.0], [0.9, 0.1], [0.2, 0.8]]])
    expected = torch.tensor([[[10, 11, 4, 5, 1, 0.9, 0.2], [20, 21, 6, 7, 1, 0.1, 0.8]]])
    assert torch.equal(yolov8_as_yolov5(raw), expected)


def test_channels_first_rows_that_can_pass_are_found_before_any_row_is_built():
    raw = torch.tensor([[[10.0, 20.0, 30.0], [11.0, 21.0, 31.0], [4.0, 6.0, 8.0], [5.0, 7.0, 9.0],
                         [0.9, 0.1, float("nan")], [0.2, 0.25, 0.1]]])
    rows = yolov8_as_yolov5(raw)[0]
    passing = yolov8_rows_passing(raw, 0.25)  # the second row's best (0.25) is not above the cut; NaN goes on
    assert len(passing) == 1
    torch.testing.assert_close(passing[0], rows[[0, 2]], equal_nan=True, rtol=0, atol=0)
    torch.testing.assert_close(yolov8_rows_passing(raw, -1.0)[0], rows, equal_nan=True, rtol=0, atol=0)
    settings = NmsSettings(0.25, 0.5)
    assert non_max_suppression(passing, settings)[0].tolist() == non_max_suppression(rows[None], settings)[0].tolist()


def test_rows_are_cut_strictly_above_the_score_best_first():
    rows = torch.tensor([[0, 0, 1, 1, 0.3, 2], [0, 0, 2, 2, 0.25, 1], [0, 0, 3, 3, 0.9, 0]])
    assert cut_rows(rows, 0.25, 10)[:, 4].tolist() == pytest.approx([0.9, 0.3])
    assert cut_rows(rows, 0.25, 1)[:, 5].tolist() == [0]
    assert cut_rows(rows, 0.0, NO_CAP)[:, 4].tolist() == pytest.approx([0.9, 0.3, 0.25])  # no cap
    assert cut_rows(rows, 0.0, 10, classes=[1])[:, 4].tolist() == [0.25]


def test_normalised_centre_boxes_become_input_pixels():
    boxes = torch.tensor([[0.5, 0.25, 0.5, 0.1]])
    # centre (200, 50), 200 x 20 px in a 400 x 200 input
    assert normalised_cxcywh_to_xyxy(boxes, 200, 400).tolist() == [[100.0, 40.0, 300.0, 60.0]]




def test_top_pairs_may_take_one_query_under_two_classes_best_first():
    boxes = torch.tensor([[[0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0]]])
    scores = torch.tensor([[[0.1, 0.8], [0.7, 0.6]]])
    expected = torch.tensor([[0, 0, 1, 1, 0.8, 1], [2, 2, 3, 3, 0.7, 0], [2, 2, 3, 3, 0.6, 1]])
    torch.testing.assert_close(top_pairs(boxes, scores, 3)[0], expected)
    assert top_pairs(boxes, scores, 10).shape == (1, 4, 6)  # k beyond the pairs: every pair once


def test_short_row_sets_are_padded_with_rows_no_cut_keeps():
    out = padded([torch.ones(2, 6), torch.ones(0, 6)])
    assert out.shape == (2, 2, 6) and out[0].tolist() == [[1.0] * 6] * 2
    assert out[1, :, 4].tolist() == [-1.0, -1.0] and cut_rows(out[1], 0.0, 10).shape == (0, 6)
    assert padded([]).shape == (0, 0, 6)


def test_grid_points_go_row_by_row_then_stride_by_stride_counting_a_partial_cell():
    points, strides = grid_points(10, 16, (8, 16), 0.5)  # stride 8: 2 rows (10 / 8 rounded up) of 2; stride 16: 1
    assert points.tolist() == [[0.5, 0.5], [1.5, 0.5], [0.5, 1.5], [1.5, 1.5], [0.5, 0.5]]
    assert strides.tolist() == [8.0, 8.0, 8.0, 8.0, 16.0]


def test_distributions_become_expected_distances_and_corners_around_a_centre():
    logits = torch.full((1, 1, 4 * 4), -30.0)
    for side, bin_ in enumerate((1, 3, 0, 2)):  # each side all in one bin
        logits[0, 0, side * 4 + bin_] = 0.0
    logits[0, 0, 2 * 4 + 1] = 0.0  # right: bins 0 and 1 alike, so half a bin
    distances = distribution_distances(logits, 4)
    assert distances[0, 0].tolist() == pytest.approx([1.0, 3.0, 0.5, 2.0], abs=1e-6)
    corners = distances_to_xyxy(torch.tensor([[10.0, 20.0]]), distances)
    assert corners[0, 0].tolist() == pytest.approx([9.0, 17.0, 10.5, 22.0], abs=1e-6)
