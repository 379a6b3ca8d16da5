"""The run record under stops: summary.json from the first moment of a run to the last, Ctrl-C, SIGTERM and
SIGHUP in every phase, with and without a console (outputs that cannot be written are in
test_run_record_write_faults.py, runs killed without warning in test_fault_injection.py).

Stops are sent to real runs in subprocesses. Where a phase is too short to hit by timing alone, a wrapper script
(written per test) holds the run in it: it prints a marker and sleeps before calling the real function.
"""
import datetime as dt
import signal
from pathlib import Path

import pandas as pd
import pytest

from tests.support.helpers import Cli, assert_nothing_half_written, read_json, small_photos, still_alive, utc
from tests.support.paths import SAMPLES

IDENTITY = ("run_id", "model", "weights", "runtime", "schema_version", "detbench_version", "started_utc")
FINISHING = "finishing the run record first"


@pytest.fixture(scope="module")
def many_images(tmp_path_factory):
    """40 small photos: with benchmark.repeats=1000 a run goes on until it is stopped."""
    return small_photos(tmp_path_factory.mktemp("many"), 40)


def images_written(run_dir: Path) -> int:
    """Annotated images under their real names (a temporary one is still being written)."""
    folder = run_dir / "images"
    return len([p for p in folder.iterdir() if not p.name.startswith(".")]) if folder.is_dir() else 0


def long_run(cli, many_images: Path, run_id: str, *overrides: str, **options) -> Cli:
    return cli(f"dataset.path={many_images}", f"run.id={run_id}", "benchmark.repeats=1000",
               "benchmark.layer_timing=false", "dataset.workers=1", *overrides, **options)


def assert_running_with_identity(run: Cli, run_dir: Path, began: dt.datetime) -> dict:
    """summary.json is there from the start, says running and who the run is."""
    running = run.wait_until(lambda: read_json(run_dir / "summary.json"), "summary.json at the start")
    assert running["status"] == "running" and running["ended_utc"] is None and running["stop_reason"] is None
    assert all(running[key] not in (None, "", {}) for key in IDENTITY), running
    assert running["run_id"] == run_dir.name and running["model"] == "yolov7-tiny"
    assert running["weights"] == "random (seed 0)" and running["runtime"]["backend"] == "torch"
    assert began <= utc(running["started_utc"]) <= dt.datetime.now(dt.timezone.utc)
    return running


def mid_run(run: Cli, run_dir: Path) -> int:
    """Waits for the first written images, checks the run still says running and has its loader worker."""
    run.wait_until(lambda: images_written(run_dir) >= 2, "the first timed batches")
    seen = images_written(run_dir)
    assert read_json(run_dir / "summary.json")["status"] == "running"
    assert run.live_children(), "dataset.workers=1 runs a DataLoader worker process"
    return seen


def assert_interrupted(run: Cli, run_dir: Path, running: dict, seen: int, name: str, console: bool = True) -> dict:
    assert "Traceback" not in run.stderr, run.stderr
    assert not console or f"Interrupted ({name}): writing what was measured so far." in run.stdout
    assert not still_alive(run.children), "a child of the run (its DataLoader worker) outlived it"
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "interrupted" and summary["stop_reason"] == name
    assert summary["images_processed"] >= seen
    assert {key: summary[key] for key in IDENTITY} == {key: running[key] for key in IDENTITY}
    assert utc(summary["started_utc"]) <= utc(summary["ended_utc"]) <= dt.datetime.now(dt.timezone.utc)
    assert_nothing_half_written(run_dir)
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    timed = steps[steps["pass_kind"] == "timed"]
    # A batch's images are written after its pipeline step ends: each batch seen on disk has its timings.
    assert (timed["step"] == "pipeline").sum() >= seen
    # The batch the stop cut short keeps the steps it finished; every finished batch has all of them.
    for _, batch in timed.groupby("batch"):
        if "pipeline" in set(batch["step"]):
            assert {"load", "preprocess", "forward", "postprocess"} <= set(batch["step"])
    # A shape's first batch (benchmark.warmup 0 here) stays out of the statistics while a warm one was timed.
    measured = timed if timed["cold_shape"].all() else timed[~timed["cold_shape"]]
    assert summary["steps"]["pipeline"]["total_ms"] == pytest.approx(
        measured[measured["step"] == "pipeline"]["ms"].sum())
    return summary


# --- summary.json from start to end, and stops in the middle of a run ---

@pytest.mark.slow
def test_sigterm_mid_run_ends_it_like_ctrl_c_even_with_a_ctrl_c_while_workers_shut_down(cli, many_images):
    """`kill <pid>`: SIGTERM ends the passes; a Ctrl-C while the DataLoader workers are being shut down
    waits for that shutdown, and the run ends as the first stop said."""
    began = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    run = long_run(cli, many_images, "term", "outputs.plots=false", "dataset.batch_size=1",
                   holds=[("utils.assembly.composition", "shutdown_workers", 3.0)])
    run_dir = run.output_dir / "term"
    running = assert_running_with_identity(run, run_dir, began)
    seen = mid_run(run, run_dir)
    run.stop(signal.SIGTERM)
    run.wait_for_line("test: holding shutdown_workers")
    run.stop(signal.SIGINT)
    code = run.finish()

    assert code == 143, run.stdout + run.stderr
    lines = [line for line in run.lines if FINISHING in line or "Interrupted (" in line]
    # The Ctrl-C was announced while the workers shut down, before the passes' end was.
    assert len(lines) == 2 and lines[0].startswith("SIGINT received: finishing the run record first"), lines
    assert_interrupted(run, run_dir, running, seen, "SIGTERM")


@pytest.mark.slow
def test_ctrl_c_at_a_terminal_and_more_stops_while_the_record_is_written(cli, many_images):
    """Ctrl-C at a terminal reaches the whole process group, DataLoader worker included. It ends the passes;
    a second Ctrl-C and a SIGTERM while the plots are drawn are noted, announced once, and wait until
    summary.json, the CSVs and the plots are all written."""
    began = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    run = long_run(cli, many_images, "twice", "outputs.plots=true", "dataset.batch_size=1",
                   holds=[("utils.reporting.plots", "write_all_plots", 3.0)])
    run_dir = run.output_dir / "twice"
    running = assert_running_with_identity(run, run_dir, began)
    seen = mid_run(run, run_dir)
    run.stop(signal.SIGINT, group=True)
    run.wait_for_line("writing what was measured so far")
    run.wait_for_line("test: holding write_all_plots")
    run.stop(signal.SIGINT, group=True)
    run.wait_for_line(FINISHING)
    run.stop(signal.SIGTERM)
    code = run.finish()

    assert code == 130, run.stderr
    announced = [line for line in run.lines if FINISHING in line]
    assert len(announced) == 1 and announced[0].startswith("SIGINT received"), announced
    summary = assert_interrupted(run, run_dir, running, seen, "SIGINT")
    assert {"step_latency.png", "memory_timeline.png"} <= set(summary["plots"])
    assert all((run_dir / "plots" / name).stat().st_size > 0 for name in summary["plots"])
    for name in ("config.yaml", "env.json", "detections.csv", "skipped.csv", "steps_summary.csv", "memory.csv",
                 "memory_steps.csv"):
        assert (run_dir / name).stat().st_size > 0, name


@pytest.mark.slow
def test_sigterm_to_the_process_group_ends_the_run_like_ctrl_c(cli, many_images):
    """Service managers and batch schedulers send SIGTERM to every process of a job, DataLoader workers too."""
    began = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    run = long_run(cli, many_images, "group", "outputs.plots=false", "dataset.batch_size=1")
    run_dir = run.output_dir / "group"
    running = assert_running_with_identity(run, run_dir, began)
    seen = mid_run(run, run_dir)
    run.stop(signal.SIGTERM, group=True)
    code = run.finish()
    assert code == 143, run.stderr
    assert_interrupted(run, run_dir, running, seen, "SIGTERM")


@pytest.mark.slow
@pytest.mark.parametrize("number, name", [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")],
                         ids=["SIGTERM-after-the-reader-went-away", "SIGHUP-as-the-terminal-closes"])
def test_a_run_whose_console_went_away_keeps_its_record(cli, many_images, number, name):
    """The reader of the run's output goes away (an orchestrator that died, a closed terminal: every later write
    meets EPIPE), then the stop arrives: the run announces nothing, and still writes every file."""
    began = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    run = long_run(cli, many_images, "gone", "outputs.plots=true", "dataset.batch_size=1")
    run_dir = run.output_dir / "gone"
    running = assert_running_with_identity(run, run_dir, began)
    seen = mid_run(run, run_dir)
    run.close_console()
    run.wait_until(lambda: images_written(run_dir) >= seen + 2, "batches after the console went away")
    run.stop(number)
    code = run.finish()
    assert code == 128 + number, run.stdout + run.stderr
    summary = assert_interrupted(run, run_dir, running, seen, name, console=False)
    assert {"step_latency.png", "memory_timeline.png"} <= set(summary["plots"])
    for file in ("detections.csv", "steps_summary.csv", "memory.csv", "report.html"):
        assert (run_dir / file).stat().st_size > 0, file


@pytest.mark.slow
def test_sighup_under_nohup_leaves_the_run_going(cli, many_images):
    """nohup starts the run with SIGHUP ignored: a closed terminal does not stop it; SIGTERM still does."""
    began = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    run = long_run(cli, many_images, "nohup", "outputs.plots=false", "dataset.batch_size=1", nohup=True)
    run_dir = run.output_dir / "nohup"
    running = assert_running_with_identity(run, run_dir, began)
    seen = mid_run(run, run_dir)
    run.stop(signal.SIGHUP, group=True)
    run.wait_until(lambda: images_written(run_dir) >= seen + 3, "batches after the SIGHUP")
    assert FINISHING not in run.stdout and read_json(run_dir / "summary.json")["status"] == "running"
    run.stop(signal.SIGTERM)
    code = run.finish()
    assert code == 143, run.stderr
    assert_interrupted(run, run_dir, running, seen + 3, "SIGTERM")


# --- stops before the run starts ---

@pytest.mark.parametrize("number, holds", [
    (signal.SIGINT, []),  # lands while main() parses its arguments and imports
    (signal.SIGTERM, [("utils.config.schema", "load_config", 30.0)]),
    (signal.SIGHUP, [("utils.config.schema", "load_config", 30.0)]),
], ids=["Ctrl-C-at-start-up", "SIGTERM-while-the-config-loads", "SIGHUP-while-the-config-loads"])
def test_a_stop_before_the_run_starts_writes_nothing(cli, number, holds):
    run = cli(f"dataset.path={SAMPLES}", "run.id=early", holds=holds)
    run.wait_for_line("test: holding load_config" if holds else "test: main starts")
    run.stop(number)
    code = run.finish()
    assert code == 128 + number, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip() == "interrupted before the run started; nothing was written"
    assert not run.output_dir.exists()
