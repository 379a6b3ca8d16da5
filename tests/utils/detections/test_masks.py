"""Instance masks as one PNG label map per image (utils/detections/masks.py)."""
import numpy as np

import pytest

from utils.detections.masks import MAX_INSTANCES, label_map


def test_label_map_numbers_rows_from_one_and_the_higher_score_wins():
    masks = np.zeros((2, 3, 4), dtype=bool)
    masks[0, 0, :2] = True
    masks[1, 0, 1:3] = True
    masks[1, 2, 3] = True
    assert label_map(masks).tolist() == [[1, 1, 2, 0], [0, 0, 0, 0], [0, 0, 0, 2]]
    assert label_map(np.zeros((0, 2, 2), dtype=bool)).tolist() == [[0, 0], [0, 0]]


def test_masks_of_another_shape_or_more_than_a_label_map_holds_are_refused():
    with pytest.raises(ValueError, match=r"need \(N, H, W\) masks, got shape \(2, 2\)"):
        label_map(np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="65536 masks do not fit a 16-bit label map"):
        label_map(np.zeros((MAX_INSTANCES + 1, 1, 1), dtype=bool))
    assert label_map(np.ones((MAX_INSTANCES, 1, 1), dtype=bool)).tolist() == [[1]]
