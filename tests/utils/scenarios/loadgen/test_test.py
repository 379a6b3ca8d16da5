"""The LoadGen scenarios: real MLPerf LoadGen tests over yolov7-tiny at 64 px, on a few photos, in seconds."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from datasets.image_folder import find_images
from datasets.labels import load_ground_truth
from pipelines.contract import Detections
from tests.support.helpers import pycocotools_stats, quick_args, run_benchmark, section_shape_errors
from tests.support.paths import ROOT, SAMPLES
from utils.scenarios.loadgen.results import accuracy_log_detections
from utils.record.sections import ScenarioSection
from utils.storage import layout

QUICK = quick_args(64, "benchmark.layer_timing=false", "outputs.plots=false", "outputs.save_images=false",
                   "outputs.report=false", "dataset.limit=4", f"dataset.path={SAMPLES}",
                   "benchmark.loadgen.min_duration_s=0.3", "benchmark.loadgen.min_query_count=4")


def _run(tmp_path: Path, run_id: str, *sets: str) -> tuple[int, Path]:
    return run_benchmark(QUICK, tmp_path, *sets, run_id=run_id)


@pytest.mark.slow
@pytest.mark.parametrize("scenario,extra", [
    ("offline", ()),
    ("server", ("benchmark.loadgen.target_qps=4", "benchmark.loadgen.target_latency_ms=5000")),
    ("multi_stream", ("benchmark.loadgen.samples_per_query=2", "dataset.batch_size=2")),
])
def test_a_scenario_runs_under_loadgen_and_keeps_its_verdict_logs_and_step_timings(tmp_path, scenario, extra):
    code, run_dir = _run(tmp_path, scenario, f"benchmark.scenario={scenario}", *extra)
    assert code == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    found = summary["scenario"]
    assert found["name"] == scenario and found["driver"].startswith("MLPerf LoadGen")
    assert not section_shape_errors(found, ScenarioSection)
    result = found["result"]
    assert result["valid"] in (True, False) and (result["valid"] or result["reason"])
    assert result["queries"] >= (1 if scenario == "offline" else 4) and result["latency_ms"]["p50"] > 0
    assert found["samples_answered"] >= 4
    summary_text = (run_dir / layout.LOADGEN_SUMMARY).read_text()
    assert {"offline": "Offline", "server": "Server", "multi_stream": "MultiStream"}[scenario] in summary_text
    assert (run_dir / layout.LOADGEN_DETAIL).stat().st_size > 0
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    timed = steps[(steps["pass_kind"] == "timed") & (steps["step"] == "pipeline")]
    assert timed["images"].sum() == found["samples_answered"]
    assert {"preprocess", "forward", "nms"} <= set(steps.loc[steps["pass_kind"] == "timed", "step"])
    assert summary["steps"]["forward"]["total_ms"] > 0


@pytest.mark.slow
def test_accuracy_mode_answers_each_image_once_and_logs_the_detections_written(tmp_path):
    code, run_dir = _run(tmp_path, "accuracy", "benchmark.scenario=offline", "benchmark.loadgen.mode=accuracy",
                         "postprocess.conf_thres=0.0001")
    assert code == 0
    logged = accuracy_log_detections(json.loads((run_dir / layout.LOADGEN_ACCURACY).read_text()))
    assert sorted(logged) == [0, 1, 2, 3]
    written = pd.read_csv(run_dir / "detections.csv")
    assert sum(len(rows) for rows in logged.values()) == len(written) > 0
    names = sorted(p.name for p in SAMPLES.glob("*.jpg"))[:4]
    for index, rows in logged.items():
        mine = written[written["image"].str.endswith(names[index])]
        assert np.allclose(np.sort(rows[:, 4]), np.sort(mine["score"].to_numpy()), atol=1e-4)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["images_processed"] == 4 and summary["scenario"]["mode"] == "accuracy"


@pytest.mark.parametrize("sets,named", [
    (("benchmark.scenario=server",), "benchmark.loadgen.target_qps"),
    (("benchmark.scenario=offline", "benchmark.loadgen.find_peak=true"), "benchmark.loadgen.find_peak"),
    (("benchmark.scenario=batch",), "benchmark.scenario"),
    (("benchmark.scenario=offline", "benchmark.loadgen.min_duration_s=0"), "benchmark.loadgen.min_duration_s"),
])
def test_bad_scenario_settings_exit_2_naming_the_key(tmp_path, capsys, sets, named):
    code, run_dir = _run(tmp_path, "bad", *sets)
    assert code == 2
    assert named in capsys.readouterr().err
    assert not run_dir.exists()


@pytest.mark.slow
def test_sigterm_keeps_a_server_scenario_record(tmp_path, spawn):
    command = [sys.executable, str(ROOT / "benchmark.py"), *QUICK, "--set", f"run.output_dir={tmp_path}",
               "--set", "run.id=stopped", "--set", "benchmark.scenario=server",
               "--set", "benchmark.loadgen.target_qps=2", "--set", "benchmark.loadgen.target_latency_ms=5000",
               "--set", "benchmark.loadgen.min_duration_s=600"]
    # spawn: a ten-minute server run never outlives the test, whatever stops it.
    run = spawn(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in run.stdout:
        if "MLPerf LoadGen drives the pipeline" in line:
            break
    time.sleep(2.0)
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=120)
    assert run.returncode == 128 + signal.SIGTERM
    summary = json.loads((tmp_path / "stopped" / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["stop_reason"] == "SIGTERM"
    assert summary["scenario"]["result"]["valid"] is False
    assert "stopped" in summary["scenario"]["result"]["reason"]


@pytest.mark.slow
def test_accuracy_mode_scores_loadgens_answers_against_the_labels(tmp_path):
    shapes = ROOT / "datasets" / "shapes"
    code, run_dir = _run(tmp_path, "scored", "benchmark.scenario=offline", "benchmark.loadgen.mode=accuracy",
                         f"dataset.path={shapes / 'images'}", f"dataset.labels={shapes / 'labels'}",
                         f"model.weights={shapes / 'yolov7-tiny-shapes.pt'}", "preprocess.img_size=320",
                         "postprocess.conf_thres=0.001", "benchmark.accuracy.enabled=false")
    assert code == 0
    scored = json.loads((run_dir / "summary.json").read_text())["scenario"]["accuracy"]
    assert scored["images"] == scored["samples_answered"] == 4 and scored["objects"] > 0
    # pycocotools on the same answers, as detections.csv holds them, against the same labels
    paths = find_images(shapes / "images", 4)
    truths = load_ground_truth(shapes / "labels", shapes / "images", paths, [str(i) for i in range(80)]).images
    written = pd.read_csv(run_dir / "detections.csv")
    found = []
    for path in paths:
        rows = written[written["image"].str.endswith(path.name)]
        found.append(Detections(torch.tensor(rows[["x1", "y1", "x2", "y2"]].to_numpy()),
                                torch.tensor(rows["score"].to_numpy()), torch.tensor(rows["class_id"].to_numpy())))
    assert scored["map_50_95"] == pytest.approx(pycocotools_stats(truths, found)[0], abs=1e-3)
    assert scored["map_50_95"] > 0.1  # a trained model at its own size finds its shapes
