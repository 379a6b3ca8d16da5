"""A real sweep of yolov7-tiny at small sizes (each point its own process), its files and answer, Ctrl-C in
the middle of one, and compare on its points."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from benchmark import main
from tests.support.paths import ROOT

QUICK = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"),
         "--set", f"dataset.path={ROOT / 'datasets' / 'samples'}", "--set", "dataset.limit=2", "--set", "dataset.batch_size=1", "--set", "benchmark.repeats=3",
         "--set", "outputs.save_images=false", "--set", "outputs.plots=false",
         # One compute thread: on a crowded machine two threads wait for each other at every barrier, and the
         # timings swing by far more than the sizes below differ.
         "--set", "runtime.threads=1"]
SMALL, LARGE = "preprocess.img_size=128", "preprocess.img_size=640"  # 25 times the pixels


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    outputs = tmp_path_factory.mktemp("sweeps")
    code = main(QUICK + ["--set", f"run.output_dir={outputs}", "--set", "run.id=sizes",
                         "--set", f"outputs.mlflow.tracking_uri=sqlite:///{outputs / 'mlflow.db'}",
                         "--sweep", "preprocess.img_size=128,640"])
    return code, outputs / "sizes"


@pytest.fixture(scope="module")
def repeat(tmp_path_factory):
    """The small point's configuration run again, in this process, without its layer pass (compare then says
    the layer tables are missing on one side)."""
    outputs = tmp_path_factory.mktemp("repeat")
    assert main(QUICK + ["--set", SMALL, "--set", f"run.output_dir={outputs}", "--set", "run.id=again",
                         "--set", "benchmark.layer_timing=false"]) == 0
    return outputs / "again"


@pytest.mark.slow
def test_sweep_writes_one_row_and_one_run_directory_per_point(sweep):
    code, folder = sweep
    assert code == 0
    table = pd.read_csv(folder / "sweep.csv")
    assert table["point"].tolist() == [SMALL, LARGE]
    assert table["preprocess.img_size"].tolist() == [128, 640]
    assert table["status"].tolist() == ["complete", "complete"]
    assert (table["p90_ms_per_image"] >= table["p50_ms_per_image"]).all() and (table["images_per_s"] > 0).all()
    assert (table["forward_p50_ms_per_image"] < table["p50_ms_per_image"]).all()
    assert table["agreement"].tolist() == ["reference", "reference"]  # torch fp32 is the reference itself
    for point in table["run_dir"]:
        summary = json.loads((folder / point / "summary.json").read_text())
        assert summary["status"] == "complete" and summary["timed_passes"] == 3
    assert summary["img_size"] == 640
    # Each point's spread between its 3 timed passes: their medians recomputed from its steps_timer.csv.
    for point, spread in zip(table["run_dir"], table["pass_p50_spread"]):
        steps = pd.read_csv(folder / point / "steps_timer.csv")
        timed = steps[(steps["pass_kind"] == "timed") & (steps["step"] == "pipeline")]
        medians = (timed["ms"] / timed["images"]).groupby(timed["pass_index"]).median()
        assert len(medians) == 3 and spread == pytest.approx(medians.max() / medians.min())


@pytest.mark.slow
def test_sweep_answer_agrees_with_its_table(sweep):
    _, folder = sweep
    table = pd.read_csv(folder / "sweep.csv").sort_values("p50_ms_per_image")
    document = json.loads((folder / "sweep.json").read_text())
    answer = document["answer"]
    assert document["status"] == "complete" and document["swept"] == {"preprocess.img_size": ["128", "640"]}
    best, runner_up = table.iloc[0], table.iloc[1]
    assert answer["fastest_equal"]["point"] == best["point"] == answer["fastest_any"]["point"]
    assert answer["runner_up_equal"]["point"] == runner_up["point"]
    margin = answer["margin"]
    assert margin["ratio"] == pytest.approx(runner_up["p50_ms_per_image"] / best["p50_ms_per_image"])
    assert margin["ci_low"] <= margin["ratio"] <= margin["ci_high"]
    assert margin["pass_spread"] == pytest.approx(max(table["pass_p50_spread"]))
    assert margin["beyond_noise"] == (margin["ci_low"] > 1.0 and margin["pass_spread"] < margin["ci_low"])
    assert best["point"] in answer["statement"]


@pytest.mark.slow
def test_sweep_report_is_one_self_contained_page(sweep):
    _, folder = sweep
    page = (folder / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 1 and (folder / "sweep.png").stat().st_size > 0
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert SMALL in page and "Fastest at equal detections" in page and "RANDOM WEIGHTS" in page


@pytest.mark.slow
def test_mlflow_holds_the_sweep_as_a_parent_run_with_one_child_per_point(sweep):
    from mlflow.tracking import MlflowClient

    _, folder = sweep
    client = MlflowClient(tracking_uri=f"sqlite:///{folder.parent / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("detbench")
    runs = client.search_runs([experiment.experiment_id])
    parents = [run for run in runs if run.info.run_name == "sizes"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    children = [run for run in runs if run.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    # the points did not log themselves as well: the store holds the parent and its children only
    assert len(runs) == 1 + len(children)
    assert {run.data.params["preprocess.img_size"] for run in children} == {"128", "640"}


def test_a_bad_point_refuses_the_whole_sweep_before_anything_runs(tmp_path, capsys):
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--sweep", "dataset.batch_size=1,0"])
    error = capsys.readouterr().err
    assert code == 2 and "dataset.batch_size=0" in error and "dataset.batch_size" in error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_rounds_interleave_and_combine_into_one_row_per_point(tmp_path, capsys):
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=rounds", "--set",
                         "benchmark.layer_timing=false", "--sweep", "preprocess.img_size=64,96", "--rounds", "2"])
    out = capsys.readouterr().out
    assert code == 0
    names = ["preprocess.img_size=64,round=1", "preprocess.img_size=96,round=1", "preprocess.img_size=96,round=2",
             "preprocess.img_size=64,round=2"]
    finished = [line.split(":")[0] for line in out.splitlines() if line.split(":")[0] in names]
    assert finished == names  # the second round in reverse order
    folder = tmp_path / "rounds"
    table = pd.read_csv(folder / "sweep.csv").set_index("point")
    document = json.loads((folder / "sweep.json").read_text())
    assert document["rounds"] == 2 and table["rounds"].tolist() == [2, 2]
    for point in table.index:
        p50s = [json.loads((folder / f"{point},round={number}" / "summary.json").read_text())
                ["pipeline_latency"]["p50_ms_per_image"] for number in (1, 2)]
        assert table.loc[point, "p50_ms_per_image"] == pytest.approx(sum(p50s) / 2, rel=1e-6)
        row = next(row for row in document["rows"] if row["point"] == point)
        assert row["round_run_dirs"] == [f"{point},round=1", f"{point},round=2"]
    assert len(document["answer"]["margin"]["round_ratios"]) == 2
    assert "by round, x" in document["answer"]["statement"]


@pytest.mark.parametrize("extra, message", [
    (["--rounds", "2"], "--rounds are for sweeps"),
    (["--rounds", "0", "--sweep", "dataset.batch_size=1,2"], "--rounds 0: give 1 or more"),
])
def test_rounds_are_refused_without_a_sweep_or_below_one(tmp_path, capsys, extra, message):
    assert main(QUICK + ["--set", f"run.output_dir={tmp_path}", *extra]) == 2
    assert message in capsys.readouterr().err and list(tmp_path.iterdir()) == []


def test_an_existing_sweep_directory_is_never_overwritten(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=taken",
                         "--sweep", "dataset.batch_size=1,2"])
    assert code == 2 and "already exists and is never overwritten" in capsys.readouterr().err
    assert list((tmp_path / "taken").iterdir()) == []


@pytest.mark.slow
def test_ctrl_c_keeps_the_finished_points_and_stops_the_rest(tmp_path, spawn):
    """The first point fails at run time (a model definition that does not exist); Ctrl-C during the
    second one stops it; the files are still written."""
    # The second point measures for a minute, so the Ctrl-C always lands while it runs.
    command = [sys.executable, str(ROOT / "benchmark.py"), *QUICK, "--set", f"run.output_dir={tmp_path}",
               "--set", "run.id=stopped", "--set", "benchmark.min_time_s=60",
               "--sweep", f"model.arch={tmp_path / 'missing.yaml'},yolov7-tiny"]
    # spawn: Ctrl-C live in the child even where the suite runs as a background job, and no sweep left going.
    process = spawn(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    table_file = tmp_path / "stopped" / "sweep.csv"
    # Once the second point's run has started (its env.json is written as its passes begin). Sent as soon as
    # the first point failed, the Ctrl-C once reached the second while its Python was still starting, and that
    # point ran on to completion (seen once in CI, not reproduced here).
    started = tmp_path / "stopped" / "model.arch=yolov7-tiny" / "env.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not started.is_file():
        time.sleep(0.2)
    assert pd.read_csv(table_file)["status"].iloc[0] == "failed"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    table = pd.read_csv(table_file)
    assert table["status"].tolist() == ["failed", "stopped"]
    assert "cannot run (exit 2)" in table["reason"][0] and "missing.yaml" in table["reason"][0]
    document = json.loads((tmp_path / "stopped" / "sweep.json").read_text())
    assert document["status"] == "stopped" and document["stop_reason"] == "SIGINT"
    assert document["answer"]["fastest_any"] is None
    assert (tmp_path / "stopped" / "report.html").is_file()
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path / "stopped"))


def _steps(compare_csv: Path) -> pd.DataFrame:
    return pd.read_csv(compare_csv).query("section == 'step'").set_index("name")


@pytest.mark.slow
def test_compare_flags_a_larger_image_as_a_significantly_slower_forward(sweep, tmp_path, capsys):
    _, folder = sweep
    assert main(["compare", str(folder / SMALL), str(folder / LARGE), "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(tmp_path / "compare.csv")
    environment = table.query("section == 'environment'")
    assert set(environment["name"]) == {"summary.img_size", "config.preprocess.img_size"}
    forward = _steps(tmp_path / "compare.csv").loc["forward"]
    assert forward["ratio"] > 1.0 and forward["ci_low"] > 1.0 and forward["significant"]
    assert {"Conv2d", "Detect"} <= set(table.query("section == 'layer_type'")["name"])
    assert "model.0.conv" in set(table.query("section == 'layer'")["name"])
    assert "Environment: 2 field(s) differ" in printed and "significant" in printed
    assert (tmp_path / "compare.html").read_text().count("<table") == 4


@pytest.mark.slow
def test_compare_of_a_repeat_finds_no_real_difference(sweep, repeat, tmp_path):
    _, folder = sweep
    assert main(["compare", str(folder / SMALL), str(repeat), "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "compare.csv")
    differing = table.query("section == 'environment'")["name"]
    assert differing[differing.str.startswith("config.")].tolist() == ["config.benchmark.layer_timing"]
    assert "no layer_types.csv in again" in table.query("section == 'layer_type'")["note"].iloc[0]
    steps = _steps(tmp_path / "compare.csv")
    for step in ("forward", "pipeline"):
        row = steps.loc[step]
        # Generous: on a shared machine a repeat drifts (medians move by a quarter or more between runs), but
        # not by a factor of two.
        assert row["ci_low"] < 2.0 and row["ci_high"] > 0.5, (step, row.to_dict())
        assert row["ci_low"] <= row["ratio"] <= row["ci_high"]
    # Intervals of zero width would flag every step; the repeat's cheap, jittery steps stay within the noise.
    assert steps["significant"].eq(False).any(), steps.to_dict()


@pytest.mark.slow
def test_compare_refuses_paths_that_are_not_runs(sweep, tmp_path, capsys):
    _, folder = sweep
    assert main(["compare", str(folder), str(tmp_path / "nothing")]) == 2
    assert "it holds a sweep: pass one of its points" in capsys.readouterr().err
    assert main(["compare", str(folder / SMALL), str(tmp_path / "nothing")]) == 2
    assert f"{tmp_path / 'nothing'} is not a folder" in capsys.readouterr().err
