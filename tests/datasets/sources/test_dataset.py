import shutil

import pytest

from datasets.dataset_root import DatasetError
from datasets.sources.dataset import IMAGES, VIDEOS, find_dataset
from datasets.sources.identity import FrameRef
from datasets.sources.settings import DecodeSettings, FrameSelection
from tests.support.clips import scramble_packets
from tests.support.paths import SAMPLES


@pytest.fixture
def videos(tmp_path, clips):
    """A folder of two videos: b/cam.avi (10 frames) and a.mp4 (15 frames), found in path order."""
    shutil.copy(clips["h264"], tmp_path / "a.mp4")
    (tmp_path / "b").mkdir()
    shutil.copy(clips["mpeg4"], tmp_path / "b" / "cam.avi")
    return tmp_path


def test_a_folder_of_videos_is_their_frames_file_after_file(videos):
    dataset = find_dataset(videos, None, DecodeSettings())
    assert dataset.kind == VIDEOS and dataset.root == videos and len(dataset.items) == 25
    assert [(item.video.name, item.index) for item in dataset.items][14:16] == [("a.mp4", 14), ("cam.avi", 0)]
    assert dataset.sizes()[0] == (240, 320) and dataset.sizes()[-1] == (120, 160)
    with dataset.open() as reading:
        items = list(reading)
        counts = reading.counts()
    # The reading yields exactly the named items, in their order.
    assert [(item.path, item.frame) for item in items] == [(str(ref.video), ref.index) for ref in dataset.items]
    assert (counts.arrived, counts.delivered, counts.ended) == (25, 25, "end of file")


def test_a_limit_counts_frames_across_videos(videos):
    dataset = find_dataset(videos, 17, DecodeSettings(selection=FrameSelection(stride=5)))
    # a.mp4 gives frames 0, 5, 10; cam.avi 0, 5: five in all, under the limit.
    assert [(item.video.name, item.index) for item in dataset.items] == \
        [("a.mp4", 0), ("a.mp4", 5), ("a.mp4", 10), ("cam.avi", 0), ("cam.avi", 5)]
    limited = find_dataset(videos, 4, DecodeSettings(selection=FrameSelection(stride=5)))
    with limited.open() as reading:
        assert [item.frame for item in reading] == [0, 5, 10, 0]


def test_a_single_video_names_its_frames_relative_to_its_folder(clips):
    dataset = find_dataset(clips["mjpeg"], None, DecodeSettings())
    assert dataset.root == clips["mjpeg"].parent and all(isinstance(item, FrameRef) for item in dataset.items)


def test_a_damaged_video_in_a_folder_keeps_its_place_and_the_rest_goes_on(videos):
    scramble_packets(videos / "a.mp4", videos / "a.mp4", [2])
    with find_dataset(videos, None, DecodeSettings()).open() as reading:
        items = list(reading)
        counts = reading.counts()
    assert len(items) == 25 and [item.frame for item in items if item.image is None] == [2]
    assert (counts.corrupt_packets, counts.not_decoded) == (1, 1) and items[-1].image is not None


def test_a_folder_of_images_stays_the_image_loaders(tmp_path):
    dataset = find_dataset(SAMPLES, 2, DecodeSettings())
    assert dataset.kind == IMAGES and [item.name for item in dataset.items] == ["dog.jpg", "eagle.jpg"]
    with dataset.open() as reading:
        items = list(reading)
    assert [item.frame for item in items] == [None, None] and items[0].image.shape == (576, 768, 3)


def test_images_and_videos_in_one_folder_are_refused(videos):
    shutil.copy(SAMPLES / "dog.jpg", videos / "dog.jpg")
    with pytest.raises(DatasetError, match=r"holds both images \(1, e.g. dog.jpg\) and videos \(2, e.g. a.mp4\); "
                                           r"point it at a folder of one kind"):
        find_dataset(videos, None, DecodeSettings())


def test_a_file_that_is_no_video_and_a_missing_path_are_named(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(DatasetError, match=r"notes.txt is a file but not a video \(.mp4, .m4v"):
        find_dataset(tmp_path / "notes.txt", None, DecodeSettings())
    with pytest.raises(DatasetError, match=r"does not exist"):
        find_dataset(tmp_path / "nowhere", None, DecodeSettings())
