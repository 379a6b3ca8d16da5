"""`benchmark.py match`: an application of its own (tests/support/recipe_driver.py: BGR, padded to a square with 0
before the resize, class-agnostic NMS) runs a file whose exporter's recipe is Ultralytics'; match finds the
application's recipe from its detections, and a run with the flags it prints agrees with the application."""
from __future__ import annotations

import csv
from pathlib import Path

import cv2
import pytest
import torch

from benchmark import main
from pipelines.contract import Detections
from tests.support.paths import ROOT, SAMPLES
from tests.support.recipe_driver import application_detections, export_detector
from utils.checks.agreement.matching import MatchCounts, match_detections

FILES = ROOT / "configs" / "files.yaml"


def small_photos(folder: Path) -> list[Path]:
    """The sample photos at 240 pixels on their longer side, every other one turned upright: both kinds of
    padding then matter."""
    folder.mkdir()
    paths = []
    for index, photo in enumerate(sorted(SAMPLES.glob("*.jpg"))):
        image = cv2.imread(str(photo))
        scale = 240 / max(image.shape[:2])
        image = cv2.resize(image, (int(image.shape[1] * scale), int(image.shape[0] * scale)),
                           interpolation=cv2.INTER_AREA)
        if index % 2:
            image = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)
        paths.append(folder / f"{photo.stem}.png")
        cv2.imwrite(str(paths[-1]), image)
    return paths


def by_image(table: Path) -> dict[str, Detections]:
    rows: dict[str, list] = {}
    with table.open(newline="") as handle:
        for row in csv.DictReader(handle):
            rows.setdefault(row["image"], []).append(
                [float(row[key]) for key in ("x1", "y1", "x2", "y2", "score", "class_id")])
    found = {}
    for image, values in rows.items():
        tensor = torch.tensor(values)
        found[image] = Detections(tensor[:, :4], tensor[:, 4], tensor[:, 5].long())
    return found


@pytest.mark.slow
def test_match_finds_an_applications_recipe_and_the_run_with_its_flags_agrees(tmp_path, capsys):
    images = small_photos(tmp_path / "images")
    file = export_detector(tmp_path)
    theirs = tmp_path / "theirs.csv"
    assert application_detections(file, images, theirs) > 50
    common = ["--set", f"model.file={file}", "--set", f"dataset.path={tmp_path / 'images'}"]
    assert main(["match", "--config", str(FILES), "--against", str(theirs), *common]) == 0
    said = capsys.readouterr().out
    assert "reproduced: your" in said and "recall 1.000, precision 1.000" in said
    flags = said.split("as flags:\n", 1)[1].splitlines()[0].split()
    assert {"preprocess.channels=bgr", "preprocess.resize=pad_resize_corner", "preprocess.pad_value=0",
            "postprocess.agnostic=true", "postprocess.iou_thres=0.45", "postprocess.conf_thres=0.5"} <= set(flags)
    assert "to keep (a config fragment):\n  preprocess:\n    resize: pad_resize_corner" in said
    out = tmp_path / "out"
    assert main(["--config", str(FILES), *common, *flags, "--set", f"run.output_dir={out}", "--set", "run.id=kept",
                 "--set", "benchmark.repeats=1", "--set", "benchmark.layer_timing=false",
                 "--set", "outputs.save_images=false", "--set", "outputs.plots=false"]) == 0
    ours, application = by_image(out / "kept" / "detections.csv"), by_image(theirs)
    counts = sum((match_detections(found, ours.get(image, Detections(torch.zeros(0, 4), torch.zeros(0),
                                                                   torch.zeros(0, dtype=torch.long))))
                  for image, found in application.items()), MatchCounts())
    assert counts.loose_recall >= 0.99 and counts.loose_precision >= 0.99
    assert sum(len(found) for found in ours.values()) == counts.candidate  # no image of ours beside none of theirs


@pytest.mark.slow
def test_bad_detections_are_one_message_naming_the_file_and_nothing_runs(tmp_path, capsys):
    small_photos(tmp_path / "images")
    file = export_detector(tmp_path)
    common = ["--config", str(FILES), "--set", f"model.file={file}", "--set", f"dataset.path={tmp_path / 'images'}"]
    cases = {"elsewhere.csv": ("image,class_id,score,x1,y1,x2,y2\nnot_here.png,0,0.9,1,1,5,5\n",
                               "names 1 image(s) dataset.path"),
             "broken.json": ('[{"image_id": "dog.png", "category_id": 0, ', "is not valid JSON"),
             "empty.csv": ("", "is empty"),
             "header.csv": ("image,class_id,score,x1,y1,x2,y2\n", "holds no detections")}
    for name, (text, said) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        assert main(["match", *common, "--against", str(path)]) == 2, name
        error = capsys.readouterr().err
        assert error.startswith(f"error: match: --against {path}") and said in error, name
        assert "Traceback" not in error and len(error.strip().splitlines()) == 1, name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["images", "grid.onnx", *cases])  # nothing written


def test_a_detector_detbench_builds_has_no_recipe_to_match(tmp_path, capsys):
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("image,class_id,score,x1,y1,x2,y2\ndog.jpg,0,0.9,1,1,5,5\n")
    assert main(["match", "--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--against", str(theirs)]) == 2
    assert "match tries the recipes of a detector given as a file" in capsys.readouterr().err
