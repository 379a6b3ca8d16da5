"""datasets.labels: YOLO folders and COCO json read to the model's label ids; bad files named with their line."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from datasets.image_folder import find_images
from datasets.labels import COCO91_IDS, LabelError, load_ground_truth
from tests.support.paths import ROOT, SHAPES

NUMBERED = [str(i) for i in range(80)]
COCO80 = (ROOT / "models" / "definitions" / "coco80.names").read_text().split("\n")[:80]


@pytest.fixture
def scene(tmp_path):
    """Two shapes images in YOLO's layout: images/ and labels/ side by side."""
    for folder in ("images", "labels"):
        (tmp_path / folder).mkdir()
    for name in ("synth0000", "synth0001"):
        shutil.copy(SHAPES / "images" / f"{name}.jpg", tmp_path / "images")
        shutil.copy(SHAPES / "labels" / f"{name}.txt", tmp_path / "labels")
    return tmp_path


def test_yolo_and_coco_give_the_same_boxes():
    images = find_images(SHAPES / "images")
    yolo = load_ground_truth(SHAPES / "labels", SHAPES / "images", images, NUMBERED)
    coco = load_ground_truth(SHAPES / "instances.json", SHAPES / "images", images, NUMBERED)
    assert (yolo.format, coco.format) == ("yolo", "coco")
    assert yolo.objects == coco.objects == 211
    for a, b in zip(yolo.images, coco.images):
        assert np.array_equal(a.labels, b.labels)
        assert np.allclose(a.boxes, b.boxes, atol=0.01)  # the text files hold 6 decimals


def test_first_line_in_pixels(scene):
    # synth0000.jpg is 400x300; its first line is `2 0.4625 0.293333 0.24 0.166667`
    truth = load_ground_truth(scene / "labels", scene / "images", find_images(scene / "images"), NUMBERED)
    assert truth.images[0].labels[0] == 2
    assert np.allclose(truth.images[0].boxes[0], [137.0, 63.0, 233.0, 113.0], atol=0.01)


def test_image_without_label_file_has_no_objects(scene):
    (scene / "labels" / "synth0001.txt").unlink()
    truth = load_ground_truth(scene / "labels", scene / "images", find_images(scene / "images"), NUMBERED)
    assert truth.without_labels == 1 and len(truth.images[1]) == 0 and len(truth.images[0]) > 0


@pytest.mark.parametrize("line, says", [("2 0.5 0.5 0.1", "expected 5 values"),
                                        ("x 0.5 0.5 0.1 0.1", "whole class id"),
                                        ("2 0.5 1.5 0.1 0.1", "normalised"),
                                        ("2 0.5 0.5 0.0 0.1", "normalised"),
                                        ("80 0.5 0.5 0.1 0.1", "class 80 is not a class of the model")])
def test_bad_yolo_line_is_named_with_file_and_line(scene, line, says):
    label = scene / "labels" / "synth0001.txt"
    label.write_text(label.read_text() + line + "\n")
    lines = len(label.read_text().splitlines())
    with pytest.raises(LabelError, match=says) as caught:
        load_ground_truth(scene / "labels", scene / "images", find_images(scene / "images"), NUMBERED)
    assert f"synth0001.txt, line {lines}" in str(caught.value)


def test_coco_json_naming_no_image_of_the_dataset(scene, tmp_path):
    document = {"images": [{"id": 1, "file_name": "elsewhere.jpg"}], "annotations": [], "categories": []}
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    with pytest.raises(LabelError, match="matches no image of dataset.path"):
        load_ground_truth(path, scene / "images", find_images(scene / "images"), NUMBERED)


def test_coco_json_unknown_category_and_bad_bbox(scene, tmp_path):
    base = {"images": [{"id": 5, "file_name": "synth0000.jpg"}], "categories": [{"id": 2, "name": "rect"}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**base, "annotations": [
        {"id": 1, "image_id": 5, "category_id": 95, "bbox": [1, 2, 3, 4]}]}))
    with pytest.raises(LabelError, match=r"annotations\[0\]: category_id 95"):
        load_ground_truth(path, scene / "images", find_images(scene / "images"), NUMBERED)
    path.write_text(json.dumps({**base, "annotations": [
        {"id": 1, "image_id": 5, "category_id": 2, "bbox": [1, 2, -3, 4]}]}))
    with pytest.raises(LabelError, match=r"annotations\[0\]: bbox"):
        load_ground_truth(path, scene / "images", find_images(scene / "images"), NUMBERED)
    path.write_text("{not json")
    with pytest.raises(LabelError, match="neither a folder of YOLO label files nor valid COCO json"):
        load_ground_truth(path, scene / "images", find_images(scene / "images"), NUMBERED)


def test_coco_ids_map_to_yolo_indices_and_yolo_indices_to_rcnn_ids(scene, tmp_path):
    # COCO's own file: 'person' is id 1, 'toothbrush' id 90; a YOLO model names them as classes 0 and 79.
    document = {"images": [{"id": 5, "file_name": "synth0000.jpg"}],
                "categories": [{"id": 1, "name": "person"}, {"id": 90, "name": "toothbrush"}],
                "annotations": [{"id": 1, "image_id": 5, "category_id": 90, "bbox": [1, 2, 3, 4]},
                                {"id": 2, "image_id": 5, "category_id": 1, "bbox": [1, 2, 3, 4]}]}
    path = tmp_path / "coco.json"
    path.write_text(json.dumps(document))
    images = find_images(scene / "images")
    yolo = load_ground_truth(path, scene / "images", images, COCO80)
    assert yolo.images[0].labels.tolist() == [79, 0] and "COCO91_IDS" in yolo.mapping
    rcnn_names = ["__background__"] + ["N/A"] * 90
    for index, cid in enumerate(COCO91_IDS):
        rcnn_names[cid] = COCO80[index]
    rcnn = load_ground_truth(path, scene / "images", images, rcnn_names)
    assert rcnn.images[0].labels.tolist() == [90, 1]
    # YOLO text files hold indices: class 2 (a rectangle, COCO's 'car') is COCO id 3 for an R-CNN
    from_text = load_ground_truth(scene / "labels", scene / "images", images, rcnn_names)
    assert from_text.images[0].labels[0] == COCO91_IDS[2] == 3


# --- video frames (datasets/sources/identity.FrameRef) ------------------------------------------------------------

def _frames(root, video, scene, indices):
    from datasets.sources.identity import FrameRef

    return [FrameRef(root / video, index, index / 15, scene.width, scene.height, scene.frames) for index in indices]


def test_yolo_labels_of_video_frames_are_read_per_frame_in_pixels(tmp_path):
    from tests.support.clips import moving_shapes, write_yolo_labels

    scene = moving_shapes(320, 240, 6)
    labels = write_yolo_labels(tmp_path / "labels", "clips/cam.mp4", scene)
    assert (labels / "clips" / "cam" / "000005.txt").is_file()
    truth = load_ground_truth(labels, tmp_path, _frames(tmp_path, "clips/cam.mp4", scene, [0, 2, 5]), NUMBERED)
    assert (truth.format, truth.without_labels, truth.objects) == ("yolo", 0, 9)
    for image, index in zip(truth.images, [0, 2, 5]):
        expected = scene.boxes(index)
        assert image.labels.tolist() == [cls for cls, *_ in expected]
        assert np.allclose(image.boxes, [box for _, *box in expected], atol=0.01)


def test_video_frames_without_their_label_files_say_how_frames_are_named(tmp_path):
    from tests.support.clips import moving_shapes

    scene = moving_shapes(320, 240, 3)
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "cam_000000.txt").write_text("0 0.5 0.5 0.1 0.1\n")
    with pytest.raises(LabelError, match=r"a video frame's label file is named after the video's path relative to "
                                         r"dataset.path without its suffix, then the frame's index in six digits, "
                                         r"e.g. clip/000000.txt\): labels name e.g. 'cam_000000'; the images are e.g. "
                                         r"'cam/000000'"):
        load_ground_truth(tmp_path / "labels", tmp_path, _frames(tmp_path, "cam.mp4", scene, [0, 1]), NUMBERED)
