"""Energy, memory and step statistics describe the timed passes only (utils/measure/listening.py, each measurement's
`listens_in`): whole runs with the real recorders, energy read through pyJoules' RAPL device from a fake powercap
tree."""
from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import pandas as pd
import pytest

import utils.measure.energy.measurement
import utils.measure.energy.recorder as energy_module
from benchmark import main
from tests.support.helpers import quick_args
from utils.measure.below_layer.control import BelowTheLayer
from utils.measure.registry import measurements
from utils.record.steps import PassKind

SAMPLES = quick_args(160, "dataset.limit=4", "outputs.save_images=false", "outputs.plots=false", "outputs.report=false",
                     "benchmark.repeats=2", "benchmark.layer_timing=true")
# Two images at 128 on one thread: the energy figures depend only on which step boundaries were read.
SHAPES = quick_args(128, "dataset.limit=2", "runtime.backend=torch", "runtime.precision=fp32", "runtime.threads=1",
                    "benchmark.layer_timing=false", "benchmark.warmup=1", "benchmark.repeats=1",
                    "outputs.save_images=false", "outputs.plots=false", "outputs.report=false", config="shapes.yaml")


def fake_powercap(tmp_path: Path, monkeypatch, counter) -> None:
    """A powercap tree with one package zone; its counter is `counter.get_energy()`, read by the recorder."""
    zone = tmp_path / "powercap" / "intel-rapl" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    (zone / "energy_uj").write_text("0\n")
    monkeypatch.setattr(energy_module, "open_rapl_device", lambda root, domains: counter)
    monkeypatch.setattr(utils.measure.energy.measurement, "EnergyRecorder",
                        functools.partial(energy_module.EnergyRecorder, root=tmp_path / "powercap"))


class HundredWatts:
    def __init__(self):
        self.start = time.perf_counter()

    def get_energy(self):
        return [int((time.perf_counter() - self.start) * 100e6)]


class ScriptedCounter:
    """Every reading 1 J above the one before: a figure depends only on which step boundaries were read."""

    def __init__(self):
        self.readings = 0

    def get_energy(self):
        self.readings += 1
        return [self.readings * 1_000_000]


def test_only_timed_passes_have_listeners():
    listening = {kind: {m.key for m in measurements() if kind in m.listens_in} | (
        {"below the layer"} if kind in BelowTheLayer.LISTENS_IN else set()) for kind in PassKind}
    assert listening[PassKind.TIMED] == {"energy", "memory", "contention", "below the layer"}
    assert all(not listening[kind] for kind in PassKind if kind is not PassKind.TIMED)


@pytest.mark.slow
def test_the_energy_window_is_the_timed_passes_window(tmp_path, monkeypatch):
    fake_powercap(tmp_path, monkeypatch, HundredWatts())
    assert main(SAMPLES + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=e",
                           "--set", "benchmark.memory.interval_s=0.005"]) == 0
    run_dir = tmp_path / "e"
    summary = json.loads((run_dir / "summary.json").read_text())
    energy = summary["energy"]
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    timed = steps[steps["pass_kind"] == "timed"]
    assert set(steps["pass_kind"]) == {"warmup", "timed", "layers"}
    # One run bracket per timed pass, as wide as the memory sampler saw it.
    windows = pd.read_csv(run_dir / "memory_steps.csv").query("step == 'run'")
    assert len(windows) == summary["timed_passes"] == energy["steps"]["run"]["count"] == 2
    assert energy["duration_s"] == pytest.approx((windows["end_s"] - windows["start_s"]).sum(), abs=0.005)
    # Every step of the timed passes, and none of the warm-up's or the hooked pass's.
    for step in ("pipeline", "load", "forward"):
        rows = timed[timed["step"] == step]
        assert energy["steps"][step]["count"] == len(rows) < (steps["step"] == step).sum()
        assert energy["steps"][step]["duration_s"] == pytest.approx(rows["ms"].sum() / 1e3, rel=0.02, abs=0.002)
    first, last = timed["start_s"].min(), timed["end_s"].max()
    assert energy["duration_s"] < last - first  # the layer pass between the timed passes is left out
    images = timed[timed["step"] == "pipeline"]["images"].sum()
    assert energy["joules_per_image"]["package_0"] == pytest.approx(energy["joules"]["package_0"] / images)


def energy_figures(run_dir: Path) -> tuple[dict, list[dict]]:
    energy = json.loads((run_dir / "summary.json").read_text())["energy"]
    timeless = {key: value for key, value in energy.items() if key not in ("duration_s", "average_watts", "steps",
                                                                          "steps_below_resolution")}
    timeless["steps"] = {tag: (step["count"], step["joules"]) for tag, step in energy["steps"].items()}
    table = pd.read_csv(run_dir / "energy.csv").drop(columns="duration_s")
    return timeless, table.to_dict("records")


@pytest.mark.slow
def test_an_accuracy_pass_changes_no_energy_figure(tmp_path, monkeypatch):
    runs = {}
    for name, accuracy in (("with", "true"), ("without", "false")):
        fake_powercap(tmp_path / f"rapl-{name}", monkeypatch, ScriptedCounter())
        assert main(SHAPES + ["--set", f"run.output_dir={tmp_path}", "--set", f"run.id={name}",
                              "--set", f"benchmark.accuracy.enabled={accuracy}"]) == 0
        runs[name] = tmp_path / name
    with_accuracy = json.loads((runs["with"] / "summary.json").read_text())
    assert with_accuracy["accuracy"]["images"] == 2  # the accuracy pass ran ...
    assert (pd.read_csv(runs["with"] / "steps_timer.csv")["pass_kind"] == "accuracy").any()
    assert "accuracy" not in json.loads((runs["without"] / "summary.json").read_text())
    figures, table = energy_figures(runs["with"])
    assert figures["status"] == "measured" and figures["joules"]["package_0"] > 0
    assert (figures, table) == energy_figures(runs["without"])  # ... and no energy figure moved


@pytest.mark.slow
def test_memory_and_step_statistics_cover_the_timed_passes_only(tmp_path):
    assert main(SAMPLES + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=m",
                           "--set", "benchmark.energy.enabled=false",
                           "--set", "benchmark.memory.interval_s=0.002"]) == 0
    run_dir = tmp_path / "m"
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    timed = steps[steps["pass_kind"] == "timed"]
    intervals = pd.read_csv(run_dir / "memory_steps.csv")
    windows = intervals[intervals["step"] == "run"].sort_values("start_s")
    assert len(windows) == 2
    for step in ("pipeline", "forward"):
        assert (intervals["step"] == step).sum() == (timed["step"] == step).sum() < (steps["step"] == step).sum()
    # No sample between the first timed pass and the last but inside one: the layer pass between is not sampled.
    samples = pd.read_csv(run_dir / "memory.csv")
    between = samples[(samples["t_s"] > windows["start_s"].min()) & (samples["t_s"] < windows["end_s"].max())]
    inside = between["t_s"].apply(lambda t: ((windows["start_s"] <= t) & (t <= windows["end_s"])).any())
    assert len(between) > 0 and inside.all()
    memory = json.loads((run_dir / "summary.json").read_text())["memory"]
    assert set(memory["peak_increase_mib_per_step"]) <= set(timed["step"]) | {"run"}
    # Step statistics: the timed passes' warm batches, never the warm-up's or the hooked pass's.
    summary_rows = pd.read_csv(run_dir / "steps_summary.csv").set_index("step")
    warm = timed[~timed["cold_shape"].astype(bool)]
    for step in ("pipeline", "forward"):
        assert summary_rows.loc[step, "count"] == (warm["step"] == step).sum()
