"""COCO's video extension read for video frames (datasets/coco_frames.py, through datasets.labels)."""
import json

import numpy as np
import pytest

from datasets.labels import LabelError, load_ground_truth
from datasets.sources.identity import FrameRef
from tests.support.clips import moving_shapes, write_coco_video, write_yolo_labels

NUMBERED = [str(i) for i in range(80)]


def _frames(root, video, scene, indices):
    return [FrameRef(root / video, index, index / 15, scene.width, scene.height, scene.frames) for index in indices]


def test_coco_video_and_yolo_frames_give_the_same_boxes(tmp_path):
    scene = moving_shapes(320, 240, 8, seed=2)
    frames = _frames(tmp_path, "clips/cam.mp4", scene, range(8))
    coco = load_ground_truth(write_coco_video(tmp_path / "frames.json", {"clips/cam.mp4": scene}), tmp_path, frames,
                             NUMBERED)
    yolo = load_ground_truth(write_yolo_labels(tmp_path / "labels", "clips/cam.mp4", scene), tmp_path, frames,
                             NUMBERED)
    assert (coco.format, coco.objects, coco.without_labels, coco.unused) == ("coco", 24, 0, 0)
    for a, b in zip(coco.images, yolo.images):
        assert np.array_equal(a.labels, b.labels) and np.allclose(a.boxes, b.boxes, atol=0.01)


@pytest.mark.parametrize("listed", ["clips/cam.mp4", "clips/cam", "cam.mp4", "cam"])
def test_a_video_is_matched_by_its_relative_path_or_file_name_with_or_without_suffix(tmp_path, listed):
    scene = moving_shapes(160, 120, 4, photo=None)
    labels = write_coco_video(tmp_path / "frames.json", {listed: scene})
    truth = load_ground_truth(labels, tmp_path, _frames(tmp_path, "clips/cam.mp4", scene, [1, 3]), NUMBERED)
    assert truth.objects == 6 and truth.unused == 2  # frames 0 and 2 were not selected


def test_a_file_counting_frames_from_1_is_refused_with_the_hint(tmp_path):
    scene = moving_shapes(160, 120, 4, photo=None)
    labels = write_coco_video(tmp_path / "frames.json", {"cam.mp4": scene}, first_frame_id=1)
    with pytest.raises(LabelError, match=r"images\[3\] names frame_id 4 of video cam.mp4, which has 4 frames \(0 to "
                                         r"3\); frame_id counts from 0.*needs 1 subtracted"):
        load_ground_truth(labels, tmp_path, _frames(tmp_path, "cam.mp4", scene, range(4)), NUMBERED)


@pytest.mark.parametrize("change, says", [
    (lambda d: d.pop("videos"), r"its images name a video_id, so it needs a list `videos`"),
    (lambda d: d["videos"][0].pop("file_name"), r"videos\[0\] needs an `id` and a `file_name` \(or `name`\)"),
    (lambda d: d["images"][1].update(frame_id="1"), r"images\[1\] has a video_id, so it needs a whole-number `frame_id`"),
    (lambda d: d["images"][1].update(frame_id=0), r"video_id and frame_id \(1, 0\) is given twice"),
])
def test_bad_video_entries_are_named(tmp_path, change, says):
    scene = moving_shapes(160, 120, 3, photo=None)
    path = write_coco_video(tmp_path / "frames.json", {"cam.mp4": scene})
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))
    with pytest.raises(LabelError, match=says):
        load_ground_truth(path, tmp_path, _frames(tmp_path, "cam.mp4", scene, range(3)), NUMBERED)


def test_labels_naming_no_video_of_the_run_say_how_videos_are_matched(tmp_path):
    scene = moving_shapes(160, 120, 2, photo=None)
    labels = write_coco_video(tmp_path / "frames.json", {"other.mp4": scene})
    with pytest.raises(LabelError, match=r"matches no image of dataset.path .*its videos' file_name or name are "
                                         r"matched.*labels name e.g. 'video_id 1 frame_id 0'"):
        load_ground_truth(labels, tmp_path, _frames(tmp_path, "cam.mp4", scene, range(2)), NUMBERED)
