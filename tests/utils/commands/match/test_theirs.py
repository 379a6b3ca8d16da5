"""Reading an application's detections for `match` (utils/commands/match/theirs.py): COCO's results JSON and
detections.csv's columns, names resolved against the dataset's images, and every malformed file refused in one
message naming it."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from utils.commands.match.theirs import MatchInputError, read_theirs

COCO = (1, 2, 3)  # a three-class network whose classes are these category ids


def dataset(tmp_path: Path, *names: str) -> list[Path]:
    paths = []
    for name in names:
        path = tmp_path / "images" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        paths.append(path)
    return paths


def read(tmp_path: Path, text: str, images: list[Path], suffix: str = ".csv", coco=None):
    path = tmp_path / f"theirs{suffix}"
    path.write_text(text)
    return read_theirs(path, images, tmp_path / "images", 3, coco)


def test_a_csv_with_detections_csvs_columns_is_read_by_image(tmp_path):
    images = dataset(tmp_path, "a.jpg", "sub/b.jpg")
    theirs = read(tmp_path, "image,class_id,class_name,score,x1,y1,x2,y2\n"
                            "a.jpg,2,c,0.9,1,2,11,22\nsub/b.jpg,0,a,0.4,0,0,5,5\na.jpg,1,b,0.3,3,3,4,4\n", images)
    assert theirs.form == "CSV" and theirs.count == 3 and theirs.lowest_score() == pytest.approx(0.3)
    found = theirs.images[images[0]]
    assert found.boxes.tolist() == [[1, 2, 11, 22], [3, 3, 4, 4]] and found.labels.tolist() == [2, 1]
    assert theirs.most_per_image() == 2 and list(theirs.images) == sorted(images)


def test_cocos_results_take_xywh_file_names_or_the_number_an_image_is_named(tmp_path):
    images = dataset(tmp_path, "000000397133.jpg", "dog.jpg")
    entries = [{"image_id": 397133, "category_id": 0, "bbox": [10, 20, 30, 40], "score": 0.8},
               {"file_name": "dog.jpg", "category_id": 2, "bbox": [0, 0, 1, 1], "score": 0.5}]
    theirs = read(tmp_path, json.dumps(entries), images, ".json")
    assert theirs.form == "COCO results JSON"
    assert theirs.images[images[0]].boxes.tolist() == [[10, 20, 40, 60]]  # x, y, w, h -> corners
    assert theirs.images[images[1]].labels.tolist() == [2]


def test_cocos_category_ids_become_class_indexes_where_they_are_the_networks(tmp_path):
    images = dataset(tmp_path, "dog.jpg")
    entries = [{"image_id": "dog.jpg", "category_id": 3, "bbox": [0, 0, 1, 1], "score": 0.5}]
    theirs = read(tmp_path, json.dumps(entries), images, ".json", coco=COCO)
    assert theirs.images[images[0]].labels.tolist() == [2] and "COCO's" in theirs.class_note


@pytest.mark.parametrize("text, said", [
    ("", "is empty"),
    ("image,class_id,score,x1,y1,x2,y2\n", "holds no detections"),
    ("image,score,x1,y1,x2,y2\na.jpg,0.5,1,1,2,2\n", "has no class_id"),
    ("image,class_id,score,x1,y1,x2,y2\na.jpg,0,high,1,1,2,2\n", "line 2: score 'high' is not a number"),
    ("image,class_id,score,x1,y1,x2,y2\na.jpg,0,0.5,5,5,2,2\n", "line 2: the box ends before it starts"),
    ("image,class_id,score,x1,y1,x2,y2\na.jpg,7,0.5,1,1,2,2\n", "class ids 7 are not among the network's 3"),
    ("image,class_id,score,x1,y1,x2,y2\na.jpg,0,0.5,1,1\n", "line 2 has"),
    ("image,class_id,score,x1,y1,x2,y2\nnowhere.jpg,0,0.5,1,1,2,2\n", "names 1 image(s) dataset.path"),
    ("image,class_id,score,x1,y1,x2,y2,frame\na.jpg,0,0.5,1,1,2,2,3\n", "names frame 3 of a.jpg"),
    ('[{"image_id": "a.jpg"', "is not valid JSON"),
    ('{"image_id": "a.jpg"}', "is a list of detections"),
    ('[{"image_id": "a.jpg", "category_id": 0, "score": 0.5}]', "detection 0 has no bbox"),
    ('[{"image_id": "a.jpg", "category_id": 0, "bbox": [1, 2], "score": 0.5}]', "is not [x, y, width, height]"),
])
def test_what_cannot_be_matched_is_refused_naming_the_file(tmp_path, text, said):
    images = dataset(tmp_path, "a.jpg")
    with pytest.raises(MatchInputError) as refusal:
        read(tmp_path, text, images, ".json" if text.startswith(("[", "{")) else ".csv")
    assert str(refusal.value).startswith(f"--against {tmp_path / 'theirs'}") and said in str(refusal.value)


def test_a_missing_file_and_a_name_two_images_share_are_refused(tmp_path):
    images = dataset(tmp_path, "x/a.jpg", "y/a.jpg")
    with pytest.raises(MatchInputError, match="no such file"):
        read_theirs(tmp_path / "nowhere.csv", images, tmp_path / "images", 3)
    with pytest.raises(MatchInputError, match="name\\(s\\) more than one image"):
        read(tmp_path, "image,class_id,score,x1,y1,x2,y2\na.jpg,0,0.5,1,1,2,2\n", images)
