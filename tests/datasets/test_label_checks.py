"""Labels that match no image, or few, entries named twice, and json too deep or large: refused or warned
about by name, never scored as mAP 0 with recall 1, never a traceback."""
from __future__ import annotations

import json
import shutil
import time

import pytest

from benchmark import main
from datasets.image_folder import find_images
from datasets.label_checks import MAX_JSON_BYTES, MAX_LABEL_FILE_BYTES
from datasets.labels import LabelError, load_ground_truth
from tests.support.paths import ROOT, SHAPES

NUMBERED = [str(i) for i in range(80)]


@pytest.fixture
def scene(tmp_path):
    """Six shapes images with their YOLO labels."""
    for folder in ("images", "labels"):
        (tmp_path / folder).mkdir()
    for index in range(6):
        name = f"synth{index:04d}"
        shutil.copy(SHAPES / "images" / f"{name}.jpg", tmp_path / "images")
        shutil.copy(SHAPES / "labels" / f"{name}.txt", tmp_path / "labels")
    return tmp_path


def load(labels, scene):
    return load_ground_truth(labels, scene / "images", find_images(scene / "images"), NUMBERED)


def test_yolo_folder_matching_no_image_names_both_folders_and_an_example_of_each(scene):
    for label in (scene / "labels").iterdir():
        label.rename(label.with_name("other_" + label.name))
    with pytest.raises(LabelError) as info:
        load(scene / "labels", scene)
    message = str(info.value)
    assert f"dataset.labels {scene / 'labels'} matches no image of dataset.path {scene / 'images'}" in message
    assert "labels name e.g. 'other_synth" in message and "the images are e.g. 'synth0000'" in message


def test_empty_labels_folder_is_no_match(scene):
    for label in (scene / "labels").iterdir():
        label.unlink()
    with pytest.raises(LabelError, match="matches no image .* labels name none at all"):
        load(scene / "labels", scene)


def test_few_matching_give_a_warning_with_the_counts(scene):
    for index in range(1, 6):
        (scene / "labels" / f"synth{index:04d}.txt").rename(scene / "labels" / f"gone{index}.txt")
    truth = load(scene / "labels", scene)
    warning = truth.coverage_warning()
    assert warning is not None
    assert "only 1 of the 6 images have labels; 5 of its label entries name no image of the run" in warning
    assert "the other 5 are scored as images without objects" in warning


def test_all_or_half_matching_give_no_warning(scene):
    assert load(scene / "labels", scene).coverage_warning() is None
    for index in range(3):
        (scene / "labels" / f"synth{index:04d}.txt").unlink()
    assert load(scene / "labels", scene).coverage_warning() is None


def coco(scene, images, annotations=()):
    path = scene / "instances.json"
    path.write_text(json.dumps({"images": images, "annotations": list(annotations), "categories": [{"id": 0,
                                                                                                "name": "0"}]}))
    return path


def test_coco_duplicate_image_ids_name_both_entries(scene):
    path = coco(scene, [{"id": 7, "file_name": "synth0000.jpg"}, {"id": 8, "file_name": "synth0001.jpg"},
                        {"id": 7, "file_name": "synth0002.jpg"}])
    with pytest.raises(LabelError) as info:
        load(path, scene)
    assert "image id 7 is given twice, by images[0] ('synth0000.jpg') and by images[2] ('synth0002.jpg')" \
        in str(info.value)


def test_coco_duplicate_file_names_name_both_entries(scene):
    path = coco(scene, [{"id": 1, "file_name": "synth0000.jpg"}, {"id": 2, "file_name": "synth0000.jpg"}])
    with pytest.raises(LabelError) as info:
        load(path, scene)
    assert "file_name 'synth0000.jpg' is given twice, by images[0] (id 1) and by images[1] (id 2)" in str(info.value)


def test_coco_matching_no_image_names_an_example_of_each(scene):
    path = coco(scene, [{"id": 1, "file_name": "dir/elsewhere.jpg"}])
    with pytest.raises(LabelError) as info:
        load(path, scene)
    assert "labels name e.g. 'elsewhere'; the images are e.g. 'synth0000'" in str(info.value)


def test_two_images_sharing_one_label_file_are_refused(scene):
    shutil.copy(scene / "images" / "synth0000.jpg", scene / "images" / "synth0000.png")
    with pytest.raises(LabelError) as info:
        load(scene / "labels", scene)
    assert "label file 'synth0000.txt' is given twice, by image synth0000.jpg and by image synth0000.png" \
        in str(info.value)


def test_deep_json_is_refused_quickly_with_a_bounded_message(scene):
    path = scene / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    started = time.process_time()  # CPU time: other jobs on the cores do not stretch it
    with pytest.raises(LabelError) as info:
        load(path, scene)
    assert time.process_time() - started < 5
    assert "nests its values deeper than json can be read here" in str(info.value)
    assert len(str(info.value)) < 600


def test_huge_json_and_label_file_are_refused_before_reading(scene):
    path = scene / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk is used
    with pytest.raises(LabelError, match=f"is {MAX_JSON_BYTES + 1:,} bytes, more than a COCO file"):
        load(path, scene)
    with open(scene / "labels" / "synth0003.txt", "ab") as handle:
        handle.truncate(MAX_LABEL_FILE_BYTES + 1)
    with pytest.raises(LabelError, match="more than a YOLO label file can need"):
        load(scene / "labels", scene)


@pytest.mark.parametrize("document, says", [
    ({"images": [{"id": [1], "file_name": "a.jpg"}], "annotations": [], "categories": []}, r"images\[0\] needs an `id`"),
    ({"images": [], "annotations": [], "categories": ["x"]}, r"categories\[0\] needs a whole-number `id`"),
    ({"images": [{"id": 1, "file_name": "synth0000.jpg"}], "categories": [{"id": 0}],
      "annotations": [{"image_id": 1, "category_id": 0, "bbox": [1, 1, 10 ** 400, 1]}]}, r"bbox must be"),
])
def test_malformed_coco_values_are_named(scene, document, says):
    path = scene / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(LabelError, match=says):
        load(path, scene)


def test_cli_exits_2_when_no_label_matches(scene, tmp_path, capsys):
    for label in (scene / "labels").iterdir():
        label.rename(label.with_name("x" + label.name))
    code = main(["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", f"dataset.path={scene / 'images'}",
                 "--set", f"dataset.labels={scene / 'labels'}", "--set", "preprocess.img_size=64",
                 "--set", f"run.output_dir={tmp_path / 'out'}", "--set", "run.id=r"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: dataset.labels") and "matches no image" in err
    assert not (tmp_path / "out" / "r").exists()
