"""datasets.item_batches batch_bounds: the positions of a batch, cut as the passes cut them (full batches, then the
rest). What both kinds of items give through the protocol is tested with each: tests/datasets/test_image_folder.py
(DatasetBatches) and tests/datasets/sources/test_frame_batches.py (FrameBatches)."""
import pytest

from datasets.item_batches import batch_bounds


@pytest.mark.parametrize("items, size, index, expected", [
    (7, 3, 0, [0, 1, 2]), (7, 3, 1, [3, 4, 5]), (7, 3, 2, [6]), (6, 3, 1, [3, 4, 5]), (1, 4, 0, [0]), (7, 3, 3, []),
], ids=["first", "second", "the rest", "last full", "one item", "past the end"])
def test_a_batch_is_its_full_slice_or_the_rest(items, size, index, expected):
    assert list(batch_bounds(items, size, index)) == expected
