"""End-to-end runs of the shipped quick config with yolov7-tiny at a small image size."""
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import pandas as pd
import pytest

from benchmark import main
from tests.support.helpers import quick_args, section_shape_errors
from tests.support.paths import ROOT, SAMPLES
from utils.measure.contention.section import ContentionSection
from utils.measure.energy.section import EnergySection
from utils.measure.memory.section import MemorySection

QUICK = quick_args(160)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """The bundled photos, one in a subfolder, plus a grayscale PNG and a file that cannot be decoded."""
    folder = tmp_path_factory.mktemp("images")
    for i, photo in enumerate(sorted(SAMPLES.glob("*.jpg"))):
        target = folder / ("nested" if i == 0 else "") / photo.name
        target.parent.mkdir(exist_ok=True)
        shutil.copy(photo, target)
    gray = cv2.cvtColor(cv2.imread(str(SAMPLES / "dog.jpg")), cv2.COLOR_BGR2GRAY)
    cv2.imwrite(str(folder / "gray.png"), gray)
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    return folder


@pytest.fixture(scope="module")
def run(dataset, tmp_path_factory):
    outputs = tmp_path_factory.mktemp("outputs")
    code = main(QUICK + ["--set", f"dataset.path={dataset}", "--set", f"run.output_dir={outputs}",
                         "--set", "run.id=e2e", "--set", "benchmark.repeats=2", "--set", "benchmark.profiler=true",
                         "--set", "dataset.batch_size=3", "--set", "postprocess.conf_thres=0.00002"])
    # The start's objects were frozen out of collections for the run and given back as it ended.
    assert gc.isenabled() and gc.get_freeze_count() == 0
    return code, outputs / "e2e"


@pytest.mark.slow
def test_run_completes_and_writes_every_file(run):
    code, run_dir = run
    assert code == 0
    for name in ("config.yaml", "env.json", "summary.json", "detections.csv", "skipped.csv", "steps_timer.csv",
                 "steps_summary.csv", "layer_timer.csv", "layer_types.csv", "layer_tree.txt", "trace.json",
                 "profiler_ops.csv", "layer_ops.csv", "memory.csv"):
        assert (run_dir / name).stat().st_size > 0, name
    env = json.loads((run_dir / "env.json").read_text())
    assert env["torch"].startswith("2.") and env["torch_threads"] >= 1 and "torch_build_config" in env


@pytest.mark.slow
def test_summary_counts_and_random_weights(run):
    _, run_dir = run
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "complete"
    assert summary["images_found"] == 8
    assert summary["images_processed"] == 7 and summary["images_skipped"] == 1
    assert summary["weights"] == "random (seed 0)"
    assert summary["timed_passes"] == 2 and summary["images_timed"] == 14
    assert summary["pipeline_latency"]["images_per_s"] > 0
    assert "load" in summary["pipeline_latency"]["definition"]
    assert summary["pipeline_latency"]["repeat_spread"] >= 0  # 2 timed passes: every batch timed twice
    assert summary["energy"]["status"] in ("measured", "unavailable")
    contention = summary["contention"]
    assert contention["status"] == "measured" and contention["windows"] == 2  # one window per timed pass
    assert 0 <= contention["other_processes_cpu_share"] <= 1 and contention["own_cpu_s"] > 0
    assert summary["runtime"]["backend"] == "torch" and summary["schema_version"] == 2
    for name, shape in (("energy", EnergySection), ("memory", MemorySection), ("contention", ContentionSection)):
        assert not section_shape_errors(summary[name], shape), name
    skipped = pd.read_csv(run_dir / "skipped.csv")
    assert skipped["image"].tolist() == ["broken.jpg"] and "decodable" in skipped["reason"][0]


@pytest.mark.slow
def test_detections_are_in_original_pixels(run, dataset):
    _, run_dir = run
    detections = pd.read_csv(run_dir / "detections.csv")
    assert list(detections.columns) == ["image", "class_id", "class_name", "score", "x1", "y1", "x2", "y2", "frame",
                                        "pts_s"]
    assert detections["frame"].isna().all() and detections["pts_s"].isna().all()  # photos, not video frames
    assert len(detections) > 0
    for image, rows in detections.groupby("image"):
        height, width = cv2.imread(str(dataset / image)).shape[:2]
        assert (rows[["x1", "x2"]].to_numpy() >= 0).all() and (rows[["x1", "x2"]].to_numpy() <= width).all()
        assert (rows[["y1", "y2"]].to_numpy() >= 0).all() and (rows[["y1", "y2"]].to_numpy() <= height).all()
        assert (rows["x2"] >= rows["x1"]).all() and (rows["score"] > 0.00002).all()
    annotated = {p.relative_to(run_dir / "images").as_posix() for p in (run_dir / "images").rglob("*.*")}
    assert annotated == {p.relative_to(dataset).as_posix() for p in dataset.rglob("*.*") if p.name != "broken.jpg"}


@pytest.mark.slow
def test_step_rows_nest_and_add_up(run):
    _, run_dir = run
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    assert steps["pass_index"].dtype.kind == "i"
    assert set(steps["pass_kind"]) == {"warmup", "timed", "layers", "profiler"}
    timed = steps[steps["pass_kind"] == "timed"]
    assert not timed["warmup"].any() and set(timed["pass_index"]) == {0, 1}
    assert set(timed["step"]) >= {"pipeline", "load", "preprocess", "forward", "postprocess", "nms", "scale_boxes",
                                  "annotate_save"}
    assert (steps[steps["warmup"]]["pass_kind"] == "warmup").all() and steps["warmup"].any()
    for (_, _), batch in timed.groupby(["pass_index", "batch"]):
        by_step = batch.set_index("step")["ms"]
        children = by_step[["load", "preprocess", "forward", "postprocess"]].sum()
        assert children <= by_step["pipeline"] + 1e-6
        assert by_step["pipeline"] - children < 0.05 * by_step["pipeline"] + 1.0
        assert by_step["nms"] + by_step["scale_boxes"] <= by_step["postprocess"] + 1e-6
    assert set(timed[timed["step"] == "annotate_save"]["pass_index"]) == {0}
    summary = pd.read_csv(run_dir / "steps_summary.csv").set_index("step")
    assert summary.loc["forward", "count"] == 6
    assert summary.loc["forward", "images"] == 14
    assert abs(summary.loc["forward", "total_ms"] - timed[timed["step"] == "forward"]["ms"].sum()) < 1e-6


@pytest.mark.slow
def test_existing_run_directory_is_refused(run, dataset, capsys):
    _, run_dir = run
    before = (run_dir / "summary.json").read_text()
    code = main(QUICK + ["--set", f"dataset.path={dataset}", "--set", f"run.output_dir={run_dir.parent}",
                         "--set", "run.id=e2e"])
    assert code == 2
    assert "already exists" in capsys.readouterr().err
    assert (run_dir / "summary.json").read_text() == before


def test_missing_dataset_exits_2_with_the_path(tmp_path, capsys):
    code = main(QUICK + ["--set", f"dataset.path={tmp_path / 'nowhere'}", "--set", f"run.output_dir={tmp_path}"])
    assert code == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "does not exist" in err
    assert not any(tmp_path.iterdir())


def _cli(*args, start=subprocess.Popen, **kwargs):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return start([sys.executable, str(ROOT / "benchmark.py"), *args], cwd=ROOT, env=env,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_config_error_has_no_traceback(tmp_path):
    proc = _cli(*QUICK, "--set", "model.archh=yolov7", "--set", "dataset.batch_size=-1")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in err
    assert "model.archh" in err and "dataset.batch_size" in err and "-1" in err


@pytest.mark.slow
def test_ctrl_c_writes_what_was_measured(tmp_path, spawn):
    images = tmp_path / "many"
    images.mkdir()
    photo = cv2.imread(str(SAMPLES / "dog.jpg"))
    for i in range(40):
        cv2.imwrite(str(images / f"{i:03d}.jpg"), photo)
    # spawn: Ctrl-C live in the child even where the suite runs as a background job, and no run left going.
    proc = _cli(*QUICK, "--set", f"dataset.path={images}", "--set", f"run.output_dir={tmp_path}",
                "--set", "run.id=stop", "--set", "benchmark.repeats=1000", "--set", "outputs.plots=false",
                start=spawn)
    annotated = tmp_path / "stop" / "images"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (annotated.is_dir() and len(list(annotated.iterdir())) >= 4):
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    summary = json.loads((tmp_path / "stop" / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["images_processed"] >= 4
    steps = pd.read_csv(tmp_path / "stop" / "steps_timer.csv")
    assert (steps["step"] == "forward").sum() >= 1


@pytest.mark.slow
def test_energy_is_unavailable_here_with_the_reason(run):
    _, run_dir = run
    energy = json.loads((run_dir / "summary.json").read_text())["energy"]
    if Path("/sys/class/powercap").exists():
        pytest.skip("this machine has a powercap tree")
    assert energy == {"status": "unavailable", "reason": energy["reason"]}
    assert "no powercap directory" in energy["reason"]
    assert not (run_dir / "energy.csv").exists() and not (run_dir / "plots" / "energy.png").exists()


@pytest.mark.slow
def test_energy_measured_end_to_end_on_a_ticking_fake_powercap(tmp_path, monkeypatch):
    """A fake RAPL package counter that rises at exactly 100 W, starts 3 s short of its wrap-around and then wraps
    every 50 s: it wraps during the run, and no step, even on a crowded machine, lasts a whole wrap period.

    The counter is computed when it is read (pyJoules' file reading is tested in test_energy.py): a thread
    writing a file would fall behind on a loaded machine and make the figure depend on the scheduler."""
    import functools

    import utils.measure.energy.measurement
    import utils.measure.energy.recorder as energy_module

    max_range = 5_000_000_000  # 5000 J
    offset = max_range - 300_000_000
    zone = tmp_path / "powercap" / "intel-rapl" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text(f"{max_range}\n")
    (zone / "energy_uj").write_text("0\n")
    start = time.perf_counter()

    class TickingCounter:
        def get_energy(self):
            return [int(offset + (time.perf_counter() - start) * 100e6) % max_range]

    monkeypatch.setattr(energy_module, "open_rapl_device", lambda root, domains: TickingCounter())
    monkeypatch.setattr(utils.measure.energy.measurement, "EnergyRecorder",
                        functools.partial(energy_module.EnergyRecorder, root=tmp_path / "powercap"))
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=energy",
                         "--set", "benchmark.layer_timing=false", "--set", "benchmark.repeats=1"])
    assert code == 0
    energy = json.loads((tmp_path / "energy" / "summary.json").read_text())["energy"]
    assert energy["status"] == "measured" and energy["domains"] == ["package_0"]
    assert energy["average_watts"]["package_0"] == pytest.approx(100, rel=0.01)
    table = pd.read_csv(tmp_path / "energy" / "energy.csv").set_index("tag")
    assert table.loc["forward", "package_0_j"] > 0
    assert table.loc["forward", "package_0_j"] == pytest.approx(100 * table.loc["forward", "duration_s"], rel=0.01)
    assert (tmp_path / "energy" / "plots" / "energy.png").stat().st_size > 0


class TouchesAFile:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


@pytest.mark.slow
def test_weights_through_the_cli(tmp_path, capsys):
    """An official-layout checkpoint replaces the random weights; hostile or mismatched files exit 2."""
    import torch

    from models import build_model

    network = build_model("yolov7-tiny", seed=11).half()
    checkpoint = tmp_path / "yolov7-tiny.pt"
    torch.save({"epoch": -1, "best_fitness": None, "training_results": None, "model": None, "ema": network,
                "updates": 0, "optimizer": None, "wandb_id": None}, checkpoint)
    common = QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "benchmark.layer_timing=false",
                      "--set", "dataset.limit=2", "--set", "outputs.plots=false"]
    assert main(common + ["--set", f"model.weights={checkpoint}", "--set", "run.id=real"]) == 0
    summary = json.loads((tmp_path / "real" / "summary.json").read_text())
    assert "checkpoint" in summary["weights"] and "random" not in summary["weights"]
    assert "RANDOM" not in capsys.readouterr().out

    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt"
    torch.save({"ema": TouchesAFile(marker)}, evil)
    assert main(common + ["--set", f"model.weights={evil}", "--set", "run.id=evil"]) == 2
    err = capsys.readouterr().err
    assert "forbidden global" in err and "posix.system" in err
    assert not marker.exists() and not (tmp_path / "evil").exists()

    assert main(common + ["--set", f"model.weights={checkpoint}", "--set", "model.arch=yolov7",
                          "--set", "run.id=mismatch"]) == 2
    err = capsys.readouterr().err
    assert "shape" in err or "missing" in err
    assert not (tmp_path / "mismatch").exists()


@pytest.mark.slow
def test_min_time_adds_passes_and_layer_batches_limit_the_hooked_pass(tmp_path):
    code = main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=long", "--set", "dataset.limit=2",
                         "--set", "dataset.batch_size=1", "--set", "benchmark.repeats=1",
                         "--set", "benchmark.min_time_s=1.5", "--set", "benchmark.layer_timing_batches=1",
                         "--set", "outputs.save_images=false", "--set", "outputs.plots=false"])
    assert code == 0
    summary = json.loads((tmp_path / "long" / "summary.json").read_text())
    steps = pd.read_csv(tmp_path / "long" / "steps_timer.csv")
    timed = steps[(steps["pass_kind"] == "timed") & (steps["step"] == "pipeline")]
    assert timed["pass_index"].nunique() == summary["timed_passes"]
    # passes are added until the timed total reaches min_time_s, and not one more (on a quiet machine one pass
    # of two small images takes well under 1.5 s, so passes were added)
    per_pass = timed.groupby("pass_index")["ms"].sum().sort_index()
    assert per_pass.sum() >= 1500 and per_pass.iloc[:-1].sum() < 1500
    assert (steps[steps["step"] == "forward"]["pass_kind"] == "layers").sum() == 1
    assert not (tmp_path / "long" / "images").exists()


@pytest.mark.slow
def test_instrumented_passes_sit_between_clean_passes(run):
    _, run_dir = run
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    steps["pass"] = steps["pass_kind"] + steps["pass_index"].astype(str)
    span = steps[steps["step"] == "pipeline"].groupby("pass").agg(start=("start_s", "min"), end=("end_s", "max"))
    assert span.loc["timed0", "end"] <= span.loc["layers0", "start"]
    assert span.loc["layers0", "end"] <= span.loc["profiler0", "start"]
    assert span.loc["profiler0", "end"] <= span.loc["timed1", "start"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["layer_timing"]["hook_overhead_ratio"] > 0
    assert summary["profiler"]["forward_overhead_ratio"] > 0


@pytest.mark.slow
def test_layer_memory_of_the_profiled_batch(run):
    _, run_dir = run
    timer = pd.read_csv(run_dir / "layer_timer.csv").set_index("path")
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    images = steps.query("pass_kind == 'profiler' and step == 'forward'")["images"].sum()
    # At 160 the first conv outputs 32 channels at 80 x 80 in float32, per image of the profiled batch.
    assert timer.loc["model.0.conv", "output_bytes"] == images * 32 * 80 * 80 * 4
    assert (timer["alloc_total_bytes"].dropna() >= timer["alloc_self_bytes"].dropna()).all()
    ops = pd.read_csv(run_dir / "layer_ops.csv")
    assert "aten::conv2d" in set(ops[ops["path"] == "model.0.conv"]["op"])
    assert json.loads((run_dir / "summary.json").read_text())["profiler"]["layer_ops_csv"] == "layer_ops.csv"


@pytest.mark.slow
def test_the_console_table_shows_both_spreads_and_none_where_a_step_ran_once(run):
    from utils.reporting.console import format_summary
    _, run_dir = run
    text = format_summary(json.loads((run_dir / "summary.json").read_text()), run_dir)
    header = next(line for line in text.splitlines() if line.strip().startswith("step "))
    assert header.split()[-2:] == ["spread_per_image", "repeat_spread"]
    annotate = next(line for line in text.splitlines() if line.strip().startswith("annotate_save "))
    assert "NaN" not in text and len(annotate.split()) == len(header.split()) - 1  # drawn once: no repeat
