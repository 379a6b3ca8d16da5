"""datasets.sources.frame_batches: the frames of dataset.path's videos in the batches the passes read. A whole pass
reads the videos from their start and hands every batch out in order; a batch or items read back decode their video
up to them, once per call; a reading over every frame leaves its counts. Tested on the session's clips."""
import shutil

import numpy as np
import pytest

from datasets.image_folder import DatasetBatches
from datasets.kinds import VIDEOS
from datasets.sources.dataset import find_dataset
from datasets.sources.frame_batches import FrameBatches, item_batches
from datasets.sources.settings import DecodeSettings, FrameSelection
from tests.support.clips import scramble_packets
from tests.support.paths import SAMPLES


@pytest.fixture
def folder(tmp_path, clips):
    """a.mp4 (15 frames, 320x240) then b.avi (10 frames, 160x120)."""
    shutil.copy(clips["h264"], tmp_path / "a.mp4")
    shutil.copy(clips["mpeg4"], tmp_path / "b.avi")
    return tmp_path


def frames(batches):
    return [[(item.path.rsplit("/", 1)[-1], item.frame) for item in batch] for batch in batches]


def test_a_whole_pass_is_the_sources_reading_cut_into_batches_and_leaves_its_counts(folder):
    source = find_dataset(folder, None, DecodeSettings())
    batches = item_batches(source, 4)
    assert isinstance(batches, FrameBatches) and batches.kind == VIDEOS and len(batches) == 7
    passed = list(batches)
    assert [len(batch) for batch in passed] == [4] * 6 + [1]
    with source.open() as reading:
        expected = list(reading)
    assert [item.frame for batch in passed for item in batch] == [item.frame for item in expected]
    assert all(np.array_equal(a.image, b.image) for a, b in zip((i for b in passed for i in b), expected))
    assert len(batches.whole_readings) == 1 and batches.whole_readings[0].delivered == 25
    list(batches)
    assert len(batches.whole_readings) == 2  # every pass reads the videos again


def test_batches_read_back_are_the_passes_own_frames_whatever_the_order(folder):
    batches = item_batches(find_dataset(folder, None, DecodeSettings()), 4)
    passed = list(batches)
    assert frames(batches.at([1, 5])) == frames([passed[1], passed[5]])  # across both videos, one reading
    assert frames([batches.load(6)]) == [[("b.avi", 9)]]  # the short last batch
    picked = batches.decode([20, 2, 2, 0])
    assert [(item.frame, item.image.shape[:2]) for item in picked] == [(5, (120, 160)), (2, (240, 320)),
                                                                      (2, (240, 320)), (0, (240, 320))]
    assert np.array_equal(picked[1].image, passed[0][2].image)
    assert len(batches.whole_readings) == 1  # read-backs of some frames are no pass over them


def test_a_pass_stopped_early_closes_its_reading_and_counts_no_whole_one(folder):
    batches = item_batches(find_dataset(folder, None, DecodeSettings()), 2)
    passing = iter(batches)
    assert [item.frame for item in next(passing)] == [0, 1]
    passing.close()
    assert batches.whole_readings == []


def test_a_subset_reads_only_its_frames_and_keeps_the_selection(folder):
    source = find_dataset(folder, None, DecodeSettings(selection=FrameSelection(stride=3)))
    batches = item_batches(source, 2)
    assert [ref.index for ref in source.items] == [0, 3, 6, 9, 12, 0, 3, 6, 9]
    subset = batches.of(source.items[3:6], batch_size=1)
    assert frames(subset) == [[("a.mp4", 9)], [("a.mp4", 12)], [("b.avi", 0)]]
    assert len(subset) == 3 and [counts.delivered for counts in subset.whole_readings] == [3]
    assert batches.whole_readings == []  # a subset's readings are its own


def test_a_damaged_frame_keeps_its_place_in_its_batch(folder, tmp_path):
    scramble_packets(folder / "a.mp4", folder / "a.mp4", [5])
    batches = item_batches(find_dataset(folder, None, DecodeSettings()), 4)
    second = batches.load(1)
    assert [item.frame for item in second] == [4, 5, 6, 7]
    assert [item.image is None for item in second] == [False, True, False, False]
    list(batches)
    counts = batches.whole_readings[0]
    assert (counts.corrupt_packets, counts.not_decoded, counts.delivered) == (1, 1, 24)


def test_images_stay_the_image_loaders_batches():
    batches = item_batches(find_dataset(SAMPLES, 3, DecodeSettings()), 2)
    assert isinstance(batches, DatasetBatches) and [path.name for path in batches.items] == \
        ["dog.jpg", "eagle.jpg", "giraffe.jpg"]
