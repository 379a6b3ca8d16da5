"""The accuracy pass in whole runs of the shapes config: mAP against the labels, accuracy.csv and its own
pass kind; bad labels stop the run at start-up; without labels an int8 run is scored against the reference."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pipelines.yolo import facts as yolo_facts

from benchmark import main
from tests.support.helpers import quick_args, run_benchmark, section_shape_errors
from tests.support.paths import SHAPES
from utils.commands.compare.accuracy import accuracy_rows
from utils.storage.finished_run import FinishedRun
from utils.record.sections import AccuracySection, AgreementSection
from utils.reporting.console import format_summary
from utils.reporting.run_figures import headline_figures

pytestmark = pytest.mark.slow  # whole runs of the shapes config

# shapes.yaml runs OpenVINO int8: its accuracy-aware search is test_int8_control_run's, here the plain int8 runs.
# At 160 px: what these tests check (the figures' sources, cuts, verdicts and files) holds at any size.
QUICK = quick_args(160, "dataset.limit=6", "benchmark.layer_timing=false", "benchmark.warmup=1",
                   "benchmark.repeats=1", "outputs.save_images=false", "outputs.plots=false", "outputs.report=false",
                   "benchmark.agreement.images=6", "runtime.calibration.accuracy_control=false", config="shapes.yaml")


def run(tmp_path: Path, *overrides: str) -> tuple[int, Path]:
    return run_benchmark(QUICK, tmp_path, *overrides, run_id="r")


def test_torch_fp32_run_scores_itself_against_the_labels(tmp_path):
    # At 256 px: the bound below is on how well the trained model finds the shapes, which it does less well
    # at 160 (0.26 there, too near the bound).
    code, run_dir = run(tmp_path, "runtime.backend=torch", "runtime.precision=fp32", "preprocess.img_size=256")
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    accuracy = summary["accuracy"]
    assert accuracy["images"] == 6 and accuracy["ground_truth"]["format"] == "yolo"
    assert accuracy["settings"] == {"conf_thres": 0.001, "iou_thres": 0.65, "max_det": 300, "multi_label": True,
                                    "protocol": "YOLOv7's test.py", "preprocess": "official",
                                    "preprocess_is": yolo_facts.EVALUATION_PREPROCESS}
    assert 0.2 < accuracy["map_50_95"] <= accuracy["map_50"] <= 1.0  # a trained model finds the shapes
    assert not section_shape_errors(accuracy, AccuracySection)
    assert "drop" not in accuracy and "agreement" not in summary  # torch fp32 is its own reference
    assert 0.0 < accuracy["at_conf_thres"]["recall"] <= 1.0
    classes = pd.read_csv(run_dir / "accuracy.csv")
    assert set(classes["class_id"]) <= {0, 2, 7} and classes["objects"].sum() == accuracy["ground_truth"]["objects"]
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    assert (steps["pass_kind"] == "accuracy").any()
    timed_forwards = steps[(steps["pass_kind"] == "timed") & (steps["step"] == "forward")]
    assert len(timed_forwards) == 6  # the accuracy pass never adds to the timed passes
    rows = {row["name"]: row for row in accuracy_rows(FinishedRun(run_dir), FinishedRun(run_dir))}
    assert rows["map_50_95"]["a"] == accuracy["map_50_95"] and rows["map_50_95"]["difference"] == 0.0
    assert sum(name.startswith("AP@0.5:0.95 class") for name in rows) == len(classes)


def test_a_labelled_rcnn_run_states_the_one_cut_its_precision_and_recall_were_taken_at(tmp_path):
    """The evaluation runs at the builder's own cut (0.05); precision and recall at the deployed cut (0.5), and the
    summary states that cut and no other beside them."""
    code, run_dir = run(tmp_path, "model.arch=fasterrcnn_mobilenet_v3_large_fpn", "model.weights=null",
                        "preprocess.img_size=128", "preprocess.max_size=160", "runtime.precision=fp32",
                        "runtime.backend=torch", "dataset.limit=3", "benchmark.agreement.images=3")
    assert code == 0
    accuracy = json.loads((run_dir / "summary.json").read_text())["accuracy"]
    assert accuracy["settings"]["conf_thres"] == 0.05 and accuracy["settings"]["max_det"] == 100
    shown = accuracy["at_conf_thres"]
    assert shown["conf_thres"] == 0.5
    assert {key: value for key, value in shown.items() if "conf" in key or "score" in key} == {"conf_thres": 0.5}
    assert shown["postprocess"] == {"conf_thres": 0.5, "iou_thres": 0.5, "max_det": 100}


def test_a_bad_label_line_stops_the_run_before_anything_is_written(tmp_path, capsys):
    labels = tmp_path / "labels"
    shutil.copytree(SHAPES / "labels", labels)
    (labels / "synth0003.txt").write_text("0 0.5 0.5 0.2 0.2\n2 0.5 0.5 1.2\n")
    outputs = tmp_path / "out"
    code = main(QUICK + ["--set", f"dataset.labels={labels}", "--set", f"run.output_dir={outputs}"])
    err = capsys.readouterr().err
    assert code == 2 and "synth0003.txt, line 2" in err and "Traceback" not in err
    assert not outputs.exists() or not any(outputs.iterdir())


def test_int8_without_labels_is_scored_against_the_reference(tmp_path):
    code, run_dir = run(tmp_path, "runtime.backend=onnxruntime", "runtime.precision=int8", "dataset.labels=null",
                        "runtime.calibration.images=6", f"runtime.cache_dir={tmp_path / 'cache'}",
                        "outputs.report=true")
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    accuracy, agreement = summary["accuracy"], summary["agreement"]
    # Without labels the reference's detections on the mirror images stand in for them: the reference does not
    # grade itself (it would read 1.0), and the figures are mAP@0.5:0.95 as with labels.
    assert "mirror images" in accuracy["ground_truth"]["source"] and accuracy["drop"]["against"] == "mirror images"
    assert 0.3 < accuracy["reference"]["map_50_95"] < 0.98
    drop, free = agreement["accuracy_drop"], accuracy["label_free"]
    # without labels the label-free verdict grades the run, with its estimate, bound and statement
    assert agreement["label_free"] == free and drop["map_50_95"] == free["estimate"] and free["figure"] == "mAP@0.5:0.95"
    # five mirror views judge by default, the drop averaged over them
    assert free["judge_views"] == 5 == accuracy["drop"]["judge_views"] and "5 views" in free["estimates"]
    assert agreement["verdict"] in ("equal", free["verdict"])
    assert free["verdict"] in ("within_budget", "different", "undecided") and free["images"] == 3
    assert agreement["detections_verdict"] in ("equal", "close", "different")
    assert not section_shape_errors(agreement, AgreementSection) and not section_shape_errors(accuracy, AccuracySection)
    if free["estimate"] is not None:
        assert free["low"] <= free["estimate"] <= free["high"]
    assert free["statement"] in format_summary(summary, run_dir)
    # int8 calibrated on the last 3 of the 6 images, scored on the first 3 only
    calibration = summary["calibration"]
    assert summary["runtime"]["preparation"]["calibration_images"] == 3 == calibration["images"]
    scored = {path.name for path in sorted((SHAPES / "images").iterdir())[:accuracy["images"]]}
    assert accuracy["images"] == agreement["images"] == 3
    assert len(calibration["files"]) == 3 and not scored & set(calibration["files"])
    # every output shows it: console, the figures TensorBoard and MLflow log, report.html
    assert f"drop {accuracy['drop']['map_50_95']:+.4f}" in format_summary(summary, run_dir)
    figures = headline_figures(summary)
    assert figures["map_50_95"] == accuracy["map_50_95"] and figures["map_drop"] == accuracy["drop"]["map_50_95"]
    page = (run_dir / "report.html").read_text()
    assert 'id="accuracy"' in page and "mAP drop vs reference" in page


def test_without_labels_the_reference_itself_can_stand_in_for_models_not_trained_with_flips(tmp_path):
    code, run_dir = run(tmp_path, "runtime.backend=onnxruntime", "runtime.precision=fp32", "dataset.labels=null",
                        "benchmark.accuracy.label_free_truth=reference", f"runtime.cache_dir={tmp_path / 'cache'}")
    assert code == 0
    accuracy = json.loads((run_dir / "summary.json").read_text())["accuracy"]
    assert "mirror" not in accuracy["ground_truth"]["source"] and accuracy["drop"]["against"] == "reference"
    assert accuracy["reference"]["map_50_95"] == pytest.approx(1.0, abs=0.02)  # the reference against itself
    assert accuracy["label_free"]["figure"] == "mAP@0.5" and accuracy["label_free"]["label_free_truth"] == "reference"


def test_sweep_names_the_fastest_within_budget_and_plots_speed_against_map(tmp_path):
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=s", "--set", "dataset.limit=4",
                         "--set", "runtime.calibration.images=4", "--set", f"runtime.cache_dir={tmp_path / 'cache'}",
                         "--sweep", "runtime.precision=fp32,int8"])
    assert code == 0
    table = pd.read_csv(tmp_path / "s" / "sweep.csv")
    assert list(table["status"]) == ["complete", "complete"]
    assert table["map_50_95"].between(0.05, 1.0).all() and table["map_drop"].notna().all()
    answer = json.loads((tmp_path / "s" / "sweep.json").read_text())["answer"]
    # A point whose verdict is in doubt (its drop interval holds the budget) is never the answer.
    budget = [row for row in table.itertuples()
              if row.agreement in ("equal", "within_budget") and not (isinstance(row.doubt, str) and row.doubt)]
    if budget:
        fastest = min(budget, key=lambda row: row.p50_ms_per_image)
        assert answer["fastest_within_budget"]["point"] == fastest.point
    else:
        assert answer["fastest_within_budget"] is None
    assert set(answer["pareto_front"]) <= set(table["point"]) and answer["pareto_front"]
    assert (tmp_path / "s" / "sweep.png").stat().st_size > 10_000
    assert "Throughput against accuracy" in (tmp_path / "s" / "report.html").read_text()


def test_precision_and_recall_at_conf_thres_are_of_the_detections_as_deployed(tmp_path):
    # A deployed NMS IoU far from the accuracy pass's 0.65: the figures at conf_thres must count the boxes the
    # run shows (detections.csv of its timed pass), not those the mAP settings' NMS keeps.
    code, run_dir = run(tmp_path, "postprocess.iou_thres=0.05")
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    at = summary["accuracy"]["at_conf_thres"]
    assert at["postprocess"] == {"conf_thres": 0.25, "iou_thres": 0.05, "max_det": 300}
    # OpenVINO int8 against the labels: the agreement graded by the mAP drop
    assert "accuracy_drop" in summary["agreement"]
    assert not section_shape_errors(summary["agreement"], AgreementSection)
    assert not section_shape_errors(summary["accuracy"], AccuracySection)
    shown = pd.read_csv(run_dir / "detections.csv")
    # int8 calibrates on images the accuracy pass never scores: only the scored images' rows count.
    shown = shown[~shown["image"].isin((summary.get("calibration") or {}).get("files", []))]
    assert at["detections"] == len(shown) > 0


@pytest.mark.parametrize("labels_hold", ["crowds", "nothing"])
def test_labels_without_objects_state_why_there_is_no_map_and_no_budget_verdict(tmp_path, capsys, labels_hold):
    if labels_hold == "crowds":
        instances = json.loads((SHAPES / "instances.json").read_text())
        for annotation in instances["annotations"]:
            annotation["iscrowd"] = 1
        labels = tmp_path / "instances.json"
        labels.write_text(json.dumps(instances))
    else:
        labels = tmp_path / "labels"
        labels.mkdir()
        for image in sorted((SHAPES / "images").iterdir()):
            (labels / f"{image.stem}.txt").write_text("")
    outputs = tmp_path / "out"
    code = main(QUICK + ["--set", f"dataset.labels={labels}", "--set", f"run.output_dir={outputs}",
                         "--set", "run.id=r", "--set", "runtime.backend=torch", "--set", "runtime.precision=fp32"])
    assert code == 0
    accuracy = json.loads((outputs / "r" / "summary.json").read_text())["accuracy"]
    assert accuracy["map_50_95"] is None and accuracy["map_50"] is None and "drop" not in accuracy
    reason = accuracy["not_scored"]
    assert ("iscrowd region" in reason) == (labels_hold == "crowds")
    assert ("empty label files" in reason) == (labels_hold == "nothing")
    assert "mAP is undefined" in reason and "nan" not in json.dumps(accuracy).lower()
    assert f"NOT SCORED: {reason}" in capsys.readouterr().out
