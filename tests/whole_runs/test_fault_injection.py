"""Runs killed at random moments, as a machine kills them: SIGKILL (the OOM killer, a job scheduler's last word),
SIGHUP (the terminal closed) and SIGTERM after the console went away. Each run directory must read back, hold
no file cut short, and keep every batch measured before the kill.

The moment is random; its seed is in every failure's message and DETBENCH_FAULT_SEED replays it. The quick
test kills one small run in its timed passes; the slow one holds each phase of a run in turn (start, warm-up,
timed passes, layer pass, accuracy pass, writing) and kills it at a random moment from the phase's start.
"""
import os
import random
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.support.helpers import assert_nothing_half_written, quick_args, read_json, small_photos
from tests.support.paths import ROOT
from utils.storage.finished_run import FinishedRun

# A batch is measured, and in the journal, once the journal's batch_ended returns: the wrapper prints a line then.
# (Not timed_batch: the untimed batches of the checks go through it too.)
MEASURED = ("utils.measure.steps.journal", "StepJournal.batch_ended")
MEASURED_LINE = "test: returned from StepJournal.batch_ended"
BATCH_STEPS = {"load", "preprocess", "forward", "postprocess", "nms", "scale_boxes"}


def seeded() -> tuple[random.Random, int]:
    seed = int(os.environ.get("DETBENCH_FAULT_SEED") or random.SystemRandom().randrange(2 ** 32))
    return random.Random(seed), seed


def assert_kept_what_it_measured(run_dir: Path, measured: int, why: str) -> FinishedRun:
    """Readable, nothing cut short, and at least the `measured` batches the run reported before the kill."""
    assert_nothing_half_written(run_dir, killed=True)
    run = FinishedRun(run_dir)
    steps = run.table("steps_timer.csv")
    pipeline = steps[steps["step"] == "pipeline"] if steps is not None else steps
    kept = 0 if pipeline is None else len(pipeline)
    assert kept >= measured, f"{why}: {measured} batches measured before the kill, {kept} kept"
    if steps is not None:
        # A batch whose pipeline step is on disk has every one of its steps there.
        for key, batch in steps.groupby(["pass_kind", "pass_index", "batch"]):
            if "pipeline" in set(batch["step"]):
                assert BATCH_STEPS <= set(batch["step"]), f"{why}: batch {key} lacks steps"
    if run.killed:
        assert run.holds_until(), why
        if measured:
            assert run.holds_until() != "before its first batch (no batch was timed)", why
    return run


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    return small_photos(tmp_path_factory.mktemp("photos"), 6)


def test_a_run_killed_in_its_timed_passes_keeps_every_batch_it_measured(cli, photos):
    """SIGKILL gives no chance to write anything: what is on disk is what the journal wrote as batches ended."""
    rng, seed = seeded()
    after = rng.randint(2, 8)  # batches measured before the kill (warm-up and timed)
    delay = rng.uniform(0.0, 0.1)
    run = cli(f"dataset.path={photos}", "run.id=killed", "benchmark.repeats=1000", "benchmark.layer_timing=false",
              "dataset.workers=0", "dataset.batch_size=1", "outputs.plots=false", taps=[MEASURED])
    run.wait_for_line(MEASURED_LINE, times=after)
    time.sleep(delay)
    measured = run.count(MEASURED_LINE)
    run.stop(signal.SIGKILL)
    assert run.finish() == -signal.SIGKILL
    why = f"seed {seed} (SIGKILL after {after} batches and {delay:.3f} s)"
    finished = assert_kept_what_it_measured(run.output_dir / "killed", measured, why)
    assert finished.killed, why
    assert len(finished.per_image_samples()) >= measured - 1, why  # the warm-up batch is not a timed one
    assert read_json(finished.path / "summary.json")["images_processed"] == 0  # the start's, never rewritten


# The phases of a run, each entered through the call the run is held at.
PHASES = {
    "start": ("utils.assembly.composition", "warmup_line"),  # summary.json says running; nothing measured yet
    "warm-up": ("utils.scenarios.single_stream.passes", "SingleStreamPasses.run"),
    "timed passes": ("utils.scenarios.single_stream.passes", "SingleStreamPasses.timed"),
    "layer pass": ("utils.scenarios.single_stream.passes", "SingleStreamPasses.layers"),
    "accuracy pass": ("utils.checks.run_checks", "run_accuracy_pass"),
    "writing": ("utils.reporting.run_writer", "RunWriter.write_record"),
}
# Each kill in two phases; every phase gets one.
KILLS = ["SIGKILL", "SIGHUP", "SIGTERM with no console", "SIGKILL", "SIGHUP", "SIGTERM with no console"]
SHAPES = ROOT / "datasets" / "shapes"


@pytest.mark.slow
@pytest.mark.parametrize("phase, kill", list(zip(PHASES, KILLS)))
def test_a_run_killed_in_any_phase_reads_back_whole(cli, phase, kill):
    """The trained shapes model on two labelled images at 128, on one thread: warm-up, two timed passes, the
    layer pass and the accuracy pass all run."""
    rng, seed = seeded()
    hold = 0.5
    delay = rng.uniform(0.0, 2 * hold)
    base = tuple(quick_args(128, "model.fuse=false", "benchmark.warmup=2", config="shapes.yaml"))
    run = cli(f"dataset.path={SHAPES / 'images'}", f"dataset.labels={SHAPES / 'labels'}", "dataset.limit=2",
              "run.id=phase", "runtime.backend=torch", "runtime.precision=fp32", "runtime.threads=1",
              "benchmark.repeats=2", "dataset.workers=0", "outputs.plots=false", base=base,
              holds=[(*PHASES[phase], hold)], taps=[MEASURED])
    module, held = PHASES[phase]
    run.wait_for_line(f"test: holding {held}")
    time.sleep(delay)
    measured = run.count(MEASURED_LINE)
    if kill == "SIGKILL":
        number = signal.SIGKILL
        run.stop(number)
    elif kill == "SIGHUP":
        number = signal.SIGHUP
        run.stop(number, group=True)  # a closing terminal hangs up its whole foreground group
    else:
        number = signal.SIGTERM
        run.close_console()
        run.stop(number)
    code = run.finish()
    why = f"seed {seed}: {kill} {delay:.2f} s into the {phase}; exit {code}\n{run.stdout}\n{run.stderr}"
    run_dir = run.output_dir / "phase"
    finished = assert_kept_what_it_measured(run_dir, measured, why)
    status = finished.summary["status"]
    if number == signal.SIGKILL:
        assert code == -signal.SIGKILL, why
        assert status in ("running", "complete"), why  # complete: the kill came after the record was written
    else:
        # The stop is handled (128 + its number) while the run can still act on it, and only then.
        assert code in (128 + number, -number), why
        assert status in ("interrupted", "complete") and (status == "complete") == (finished.summary[
            "stop_reason"] is None), why
        assert "Traceback" not in run.stderr, why
    if status != "running":
        assert_nothing_half_written(run_dir)
        steps = pd.read_csv(run_dir / "steps_timer.csv")
        assert (steps["step"] == "pipeline").sum() >= measured, why
