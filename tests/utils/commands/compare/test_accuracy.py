"""The accuracy of two runs side by side (utils/commands/compare/accuracy.py): the accuracy pass's figures and each
class's AP, B against A, as differences; a note where they were scored against different ground truth."""
import json

import pytest

from utils.commands.compare.accuracy import accuracy_rows
from utils.storage.finished_run import FinishedRun


def run(folder, name, accuracy, classes=None):
    path = folder / name
    path.mkdir()
    (path / "summary.json").write_text(json.dumps({"status": "complete", "accuracy": accuracy}))
    if classes is not None:
        (path / "accuracy.csv").write_text("class_id,class_name,ap_50_95\n" + "".join(
            f"{class_id},{name},{ap}\n" for class_id, name, ap in classes))
    return FinishedRun(path)


def test_figures_and_classes_as_differences_b_against_a(tmp_path):
    truth = {"source": "labels/"}
    a = run(tmp_path, "a", {"map_50_95": 0.5, "map_50": 0.7, "ground_truth": truth}, [(0, "person", 0.4)])
    b = run(tmp_path, "b", {"map_50_95": 0.45, "map_50": 0.7, "ground_truth": truth},
            [(0, "person", 0.35), (2, "car", 0.6)])
    rows = {row["name"]: row for row in accuracy_rows(a, b)}
    assert list(rows) == ["map_50_95", "map_50", "AP@0.5:0.95 class 0 (person)", "AP@0.5:0.95 class 2 (car)"]
    assert rows["map_50_95"]["difference"] == pytest.approx(-0.05) and rows["map_50"]["difference"] == 0.0
    assert rows["AP@0.5:0.95 class 2 (car)"]["a"] is None and rows["AP@0.5:0.95 class 2 (car)"]["difference"] is None
    assert all(row["note"] == "" and row["section"] == "accuracy" for row in rows.values())


def test_other_ground_truth_is_noted_and_no_accuracy_pass_gives_no_rows(tmp_path):
    a = run(tmp_path, "a", {"map_50_95": 0.5, "ground_truth": {"source": "labels/"}})
    b = run(tmp_path, "b", {"map_50_95": 0.5, "ground_truth": {"source": "the reference's detections"}})
    assert [row["note"] for row in accuracy_rows(a, b)] == ["scored against different ground truth"]
    assert accuracy_rows(run(tmp_path, "c", None), run(tmp_path, "d", None)) == []
