"""The pure parts of one camera run (utils/scenarios/cameras/run.py): the window's held batches as the pass runner
loads a dataset's, and the one first frame per size each detector warms; the threads of a run are left to
tests/whole_runs/test_cameras_run.py."""
from __future__ import annotations

import numpy as np

from datasets.image_folder import LoadedImage
from utils.scenarios.cameras.run import HeldBatches, _one_frame_per_size


def batch(*names: str) -> list[LoadedImage]:
    return [LoadedImage(name, None) for name in names]


def paths(batches) -> list[list[str]]:
    return [[item.path for item in items] for items in batches]


def test_held_batches_load_by_their_batch_index_not_their_place():
    # The window's batches 4 and 9 were held: the layer pass asks for them by those indices.
    held = HeldBatches(((4, batch("a", "b")), (9, batch("c"))))
    assert len(held) == 2 and held.indices == (4, 9)
    assert paths(held) == [["a", "b"], ["c"]]
    assert [item.path for item in held.load(9)] == ["c"]
    assert paths(held.at([9, 4])) == [["c"], ["a", "b"]]


def test_no_held_batch_is_an_empty_source():
    held = HeldBatches(())
    assert len(held) == 0 and held.indices == () and list(held) == []


def test_each_detector_warms_one_first_frame_per_size():
    small, other_small = np.zeros((4, 6, 3), np.uint8), np.ones((4, 6, 3), np.uint8)
    large = np.zeros((8, 6, 3), np.uint8)
    kept = _one_frame_per_size([small, large, other_small])
    assert len(kept) == 2 and kept[0] is small and kept[1] is large  # the first of each height and width
