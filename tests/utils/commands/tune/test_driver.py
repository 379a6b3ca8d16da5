"""Whole races of the driver (utils/commands/tune/driver.py) over a deterministic fake of run outcomes: a launcher that
writes each run's files from a model of what each way costs and measures, on a clock of its own. Five ways of
computing (as on an AVX2 CPU: torch, ONNX Runtime and OpenVINO at fp32, the last two at int8 too), two batch sizes,
300 labelled images: the first looks are short and come before any second run, a budget that fits them but not full
first looks answers, and the answer is the one the model says is fastest within the accuracy budget."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pytest

from tests.support.paths import CONFIGS, SHAPES
from utils.commands.tune import driver as tune_driver
from utils.commands.tune.driver import Tune, TuneBudgetError, TuneRequest
from utils.commands.tune.goals import Goal
from utils.commands.tune.shared_runs import MARKER
from utils.commands.tune.space import Machine
from utils.launchers.base import Launcher, PointOutcome
from utils.record.steps import PIPELINE_STEP, PassKind

pytestmark = pytest.mark.slow  # a few seconds: hundreds of configs validated, a few dozen run directories read back

IMAGES = 300
# ms per image at batch 1 (batch 2: 10% less), and the verdict each way's check gives.
SPEED = {("torch", "fp32"): 100.0, ("onnxruntime", "fp32"): 60.0, ("onnxruntime", "int8"): 40.0,
         ("openvino", "fp32"): 50.0, ("openvino", "int8"): 30.0}
VERDICT = {("onnxruntime", "fp32"): "equal", ("onnxruntime", "int8"): "different", ("openvino", "fp32"): "equal",
           ("openvino", "int8"): "within_budget"}
# What the fastest candidate within the budget is, by the model: OpenVINO int8 at batch 2.
BEST = ("openvino", "int8", "2")
# Costs, in seconds: a process's start, a run's own fixed part (loading the model, writing its files), a check.
START_S, FIXED_S, CHECK_S = 4.0, 8.0, 12.0
REPEATS = 3  # the config's timed passes


def speed(backend: str, precision: str, batch: int) -> float:
    return SPEED[backend, precision] * (0.9 if batch == 2 else 1.0)


def settings_of(arguments: list[str]) -> dict[str, str]:
    sets = [arguments[i + 1] for i, part in enumerate(arguments) if part == "--set"]
    found = {key: value for key, _, value in (item.partition("=") for item in sets)}
    return dict(found, **{"run.id": json.loads(found["run.id"])})


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeLauncher(Launcher):
    """Runs nothing: each run's summary.json, steps_timer.csv and detections.csv are written from the model, and the
    clock moves on by what the run costs. `undecided`: ways whose check is undecided on fewer than 120 images."""

    clock: Clock
    undecided: frozenset = frozenset()
    name: str = "fake"
    launched: list[dict] = field(default_factory=list)  # every run's settings, in the order they ran

    def run(self, jobs, stops, started, finished) -> None:
        for job in jobs:
            started(job, "")
            self.clock.now += START_S
            markers = []
            for run_dir, arguments in json.loads(job.arguments[1]):
                seconds = self._run(job.run_dir.parent / run_dir, settings_of(arguments))
                self.clock.now += seconds
                markers.append(f"{MARKER}\t{run_dir}\t0\t{seconds:.3f}\n")
            finished(job, PointOutcome(0, "".join(markers), "".join(markers)))

    def _run(self, folder, sets: dict[str, str]) -> float:
        self.launched.append(sets)
        backend, precision = sets["runtime.backend"], sets["runtime.precision"]
        batch = int(sets["dataset.batch_size"])
        checks = sets.get("benchmark.agreement.enabled") != "false"
        reference = (backend, precision) == ("torch", "fp32")
        batches = min(int(sets.get("benchmark.timed_batches", IMAGES)), math.ceil(IMAGES / batch))
        passes = int(sets.get("benchmark.repeats", REPEATS))
        ms = speed(backend, precision, batch)
        scored = min(int(sets.get("benchmark.accuracy.images", IMAGES)), IMAGES)
        summary = {"status": "complete", "images_found": IMAGES, "accuracy": {"images": scored},
                   "runtime": {"backend": backend, "precision": precision}}
        if checks and not reference:
            verdict = VERDICT[backend, precision]
            if (backend, precision) in self.undecided and scored < 120:
                summary["agreement"] = {"verdict": "undecided", "images": scored,
                                        "accuracy_drop": {"images_needed": 120, "max_drop": 0.01, "interval": {
                                            "low": 0.0, "high": 0.02, "confidence": 0.95}}}
            else:
                summary["agreement"] = {"verdict": verdict, "images": scored}
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps(summary))
        rows = ["step,pass_kind,pass_index,batch,images,ms"]
        for index in range(passes):
            for number in range(batches):
                jitter = 1.0 + 0.01 * ((number + index) % 5 - 2)  # the same every run: a deterministic spread
                rows.append(f"{PIPELINE_STEP},{PassKind.TIMED.value},{index},{number},{batch},{ms * batch * jitter}")
        (folder / "steps_timer.csv").write_text("\n".join(rows) + "\n")
        (folder / "detections.csv").write_text("image,class_id,class_name,score,x1,y1,x2,y2\n"
                                               "synth0000.jpg,0,0,0.90000,10.00,10.00,50.00,50.00\n")
        return FIXED_S + (CHECK_S if checks and not reference else 0.0) + passes * batches * batch * ms / 1000.0


def full_first_look_s(backend: str, precision: str) -> float:
    """What the old first look, the whole configured run with its check, costs in this model (at batch 1)."""
    checks = (backend, precision) != ("torch", "fp32")
    return START_S + FIXED_S + (CHECK_S if checks else 0.0) + REPEATS * IMAGES * speed(backend, precision, 1) / 1000


@pytest.fixture
def folder(tmp_path):
    """300 labelled images: the 48 labelled scenes of datasets/shapes, linked over and over."""
    images, labels = tmp_path / "data" / "images", tmp_path / "data" / "labels"
    images.mkdir(parents=True)
    labels.mkdir()
    scenes = sorted((SHAPES / "images").glob("*.jpg"))
    for number in range(IMAGES):
        scene = scenes[number % len(scenes)]
        (images / f"synth{number:04d}.jpg").symlink_to(scene)
        (labels / f"synth{number:04d}.txt").symlink_to(SHAPES / "labels" / f"{scene.stem}.txt")
    return tmp_path


def race(folder, monkeypatch, minutes: float, undecided=frozenset()):
    monkeypatch.setattr(tune_driver, "this_machine",
                        lambda: Machine(frozenset({"avx2"}), 2, ("torch", "onnxruntime", "openvino")))
    clock = Clock()
    launcher = FakeLauncher(clock, frozenset(undecided))
    overrides = [f"dataset.path={folder / 'data' / 'images'}", f"dataset.labels={folder / 'data' / 'labels'}",
                 f"benchmark.repeats={REPEATS}", "runtime.threads=2", "runtime.pinning=false",
                 f"run.output_dir={folder}", "run.id=race"]
    request = TuneRequest(str(CONFIGS / "samples_tiny.yaml"), overrides,
                          ["runtime.precision=fp32,int8", "dataset.batch_size=1,2"], Goal("latency"), minutes)
    lines: list[str] = []
    tune = Tune(request, launcher, console=lines.append, clock=clock)
    tune.prepare()
    return tune, launcher, lines


def test_first_looks_are_short_and_every_way_gets_one_before_any_second_run(folder, monkeypatch):
    tune, launcher, _ = race(folder, monkeypatch, minutes=6)
    assert tune.run() == 0
    ran = launcher.launched
    looks, later = ran[:5], ran[5:]
    # One first look per way, the five first, at batch 1.
    assert {(sets["runtime.backend"], sets["runtime.precision"]) for sets in looks} == set(SPEED)
    assert all(sets["dataset.batch_size"] == "1" and sets["run.id"].endswith("round=1") for sets in looks)
    assert all("round=1" not in sets["run.id"] for sets in later) and later
    # A first look: one timed pass of the 30 batches that hold its verdict's 30 images; its check stays at them.
    for sets in looks:
        assert sets["benchmark.repeats"] == "1" and sets["benchmark.timed_batches"] == "30"
        if sets["runtime.backend"] != "torch":
            assert sets["benchmark.accuracy.images"] == "30" and sets["benchmark.accuracy.max_images"] == "30"
    # The runs after them are full: every batch, the config's passes.
    assert all("benchmark.timed_batches" not in sets and sets["benchmark.repeats"] == str(REPEATS) for sets in later)
    state = json.loads((folder / "race" / "tune.json").read_text())
    assert state["rounds"][0]["look"]["kind"] == "first look" and state["rounds"][0]["look"]["timed_batches"] == [30]
    assert all(entry["look"]["kind"] == "full" for entry in state["rounds"][1:])


def test_a_budget_that_fits_short_looks_but_not_full_ones_answers_with_the_known_fastest(folder, monkeypatch):
    # Full first looks (every image, three passes, the check) would take 6 min in this model; the budget is 5.
    assert sum(full_first_look_s(*way) for way in SPEED) == pytest.approx(6 * 60)
    tune, launcher, lines = race(folder, monkeypatch, minutes=5)
    assert tune.run() == 0
    document = json.loads((folder / "race" / "sweep.json").read_text())
    winner = document["answer"]["winner"]
    assert (winner["values"]["runtime.backend"], winner["values"]["runtime.precision"],
            winner["values"]["dataset.batch_size"]) == BEST
    assert winner["verdict"] == "within_budget" and winner["verdict_images"] == 30
    assert document["time"]["elapsed_s"] <= 5 * 60
    # ONNX Runtime's int8 was judged different on its first look: dropped whole, never run again.
    assert not [sets for sets in launcher.launched[5:] if sets["runtime.precision"] == "int8"
                and sets["runtime.backend"] == "onnxruntime"]
    # The files say which figure was a first look's.
    rows = {row["point"]: row for row in document["rows"]}
    assert rows[winner["candidate"]]["looks"] == "full (rounds 2, 3)" or "full" in rows[winner["candidate"]]["looks"]
    looked = [row for row in document["rows"] if row["looks"].startswith("first look (round 1)")]
    assert len(looked) == 5
    assert any(line.startswith("  round 1 (first looks: 1 timed pass of 30 batch(es), verdicts on 30 images)")
               for line in lines)
    assert any("openvino int8: " in line and "first look 30.00 ms/image (p50); best full run 27.00 ms/image"
               in line for line in lines)


def test_a_way_undecided_on_its_looks_images_is_judged_again_on_more_not_dropped(folder, monkeypatch):
    tune, launcher, _ = race(folder, monkeypatch, minutes=8, undecided={("openvino", "fp32")})
    assert tune.run() == 0
    checks = [sets for sets in launcher.launched if sets["runtime.backend"] == "openvino"
              and sets["runtime.precision"] == "fp32" and sets.get("benchmark.agreement.enabled") != "false"]
    # Its first look scored 30 and was undecided; its next check scored the 120 the verdict asked for.
    assert [sets["benchmark.accuracy.images"] for sets in checks] == ["30", "120"]
    state = json.loads((folder / "race" / "tune.json").read_text())
    judged = [entry for entry in state["entries"] if entry["verdict_images"] == 120]
    assert judged and all(entry["verdict"] == "equal" for entry in judged)


def test_a_budget_too_short_even_for_short_looks_says_the_minutes_that_would_fit(folder, monkeypatch):
    tune, _, _ = race(folder, monkeypatch, minutes=0.9)
    with pytest.raises(TuneBudgetError) as refused:
        tune.run()
    message = str(refused.value)
    # The first look (torch fp32 on an AVX2 CPU: fp32 first, no check) took 4 + 8 + 3 s; its own 30 images at
    # 100 ms (3 s) are its own: 12 s a look at least, 1.0 min for the 5 ways.
    assert "a short first look at each of the 5 ways of computing (first looks: 1 timed pass of 30 batch(es)" in message
    assert "takes at least 1.0 min here (5 process(es): the first look took 15.0 s" in message
    assert "12.0 s of it what any look pays" in message and "Give --minutes 1 or more" in message
