"""The run record under stops: summary.json from the first moment of a run to the last, Ctrl-C and SIGTERM in
every phase (outputs that cannot be written are in test_run_record_write_faults.py).

Stops are sent to real runs in subprocesses. Where a phase is too short to hit by timing alone, a wrapper script
(written per test) holds the run in it: it prints a marker and sleeps before calling the real function.
"""
import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import EVERY_PHASE as QUICK, assert_nothing_half_written, read_json, small_photos, utc
from tests.paths import ROOT, SAMPLES

IDENTITY = ("run_id", "model", "weights", "runtime", "schema_version", "detbench_version", "started_utc")
FINISHING = "finishing the run record first"


@pytest.fixture(scope="module")
def many_images(tmp_path_factory):
    """40 small photos: with benchmark.repeats=1000 a run goes on until it is stopped."""
    return small_photos(tmp_path_factory.mktemp("many"), 40)


def _process_start(pid: int):
    """(state, start time) of a live process, or None: a pid alone may be reused by the time it is checked."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], fields[19]


def still_alive(children: dict[int, str]) -> list[int]:
    alive = []
    for pid, started in children.items():
        now = _process_start(pid)
        if now is not None and now[0] != "Z" and now[1] == started:
            alive.append(pid)
    return alive


WRAPPER = '''import importlib, sys, time
sys.path.insert(0, {root!r})
import benchmark

def hold(module, attribute, seconds):
    original = getattr(module, attribute)
    def held(*args, **kwargs):
        print(f"test: holding {{attribute}}", flush=True)
        time.sleep(seconds)
        return original(*args, **kwargs)
    setattr(module, attribute, held)

for module, attribute, seconds in {holds!r}:
    hold(importlib.import_module(module), attribute, seconds)
print("test: main starts", flush=True)
sys.exit(benchmark.main(sys.argv[1:]))
'''


class Cli:
    """benchmark.main in a subprocess in a session of its own; stdout is read line by line as it comes, and the
    process's children are recorded while it runs."""

    def __init__(self, tmp_path: Path, *overrides: str, holds=()):
        script = tmp_path / "run_benchmark.py"
        script.write_text(WRAPPER.format(root=str(ROOT), holds=list(holds)))
        self.output_dir = tmp_path / "outputs"
        args = QUICK + ["--set", f"run.output_dir={self.output_dir}"]
        for override in overrides:
            args += ["--set", override]
        # A background process of a non-interactive shell would inherit SIGINT as ignored; its own session
        # keeps Ctrl-C live and gives it a process group of its own.
        self.proc = subprocess.Popen([sys.executable, str(script), *args], cwd=ROOT, text=True,
                                     env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[str] = []
        self.err: list[str] = []
        self.children: dict[int, str] = {}
        self._readers = [threading.Thread(target=self._read, args=(stream, sink), daemon=True)
                         for stream, sink in ((self.proc.stdout, self.lines), (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream, sink: list) -> None:
        for line in stream:
            sink.append(line)

    def _record_children(self) -> None:
        for listing in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            try:
                pids = [int(pid) for pid in listing.read_text().split()]
            except OSError:
                continue
            for pid in pids:
                started = _process_start(pid)
                if started is not None:
                    self.children.setdefault(pid, started[1])

    def live_children(self) -> list[int]:
        self._record_children()
        return still_alive(self.children)

    def wait_until(self, condition, what: str, timeout: float = 90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._record_children()
            value = condition()
            if value:
                return value
            assert self.proc.poll() is None, f"the run ended before {what}:\n{self.stdout}\n{self.stderr}"
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}:\n{self.stdout}")

    def wait_for_line(self, text: str) -> None:
        self.wait_until(lambda: any(text in line for line in list(self.lines)), repr(text))

    def stop(self, number: int, group: bool = False) -> None:
        if group:
            os.killpg(self.proc.pid, number)
        else:
            self.proc.send_signal(number)

    def finish(self, timeout: float = 90) -> int:
        code = self.proc.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=10)
        return code

    @property
    def stdout(self) -> str:
        return "".join(self.lines)

    @property
    def stderr(self) -> str:
        return "".join(self.err)


@pytest.fixture
def cli(tmp_path):
    """Starts runs with Cli; a run a failed test left going is killed with its workers."""
    runs = []

    def start(*overrides: str, holds=()) -> Cli:
        runs.append(Cli(tmp_path, *overrides, holds=holds))
        return runs[-1]

    yield start
    for run in runs:
        if run.proc.poll() is None:
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.wait()


def images_written(run_dir: Path) -> int:
    """Annotated images under their real names (a temporary one is still being written)."""
    folder = run_dir / "images"
    return len([p for p in folder.iterdir() if not p.name.startswith(".")]) if folder.is_dir() else 0


def long_run(cli, many_images: Path, run_id: str, *overrides: str, holds=()) -> Cli:
    return cli(f"dataset.path={many_images}", f"run.id={run_id}", "benchmark.repeats=1000",
               "benchmark.layer_timing=false", "dataset.workers=1", *overrides, holds=holds)


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


def assert_interrupted(run: Cli, run_dir: Path, running: dict, seen: int, name: str) -> dict:
    assert "Traceback" not in run.stderr, run.stderr
    assert f"Interrupted ({name}): writing what was measured so far." in run.stdout
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
                   holds=[("utils.harness.composition", "shutdown_workers", 3.0)])
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
                   holds=[("utils.writers.plots", "write_all_plots", 3.0)])
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


# --- stops before the run starts ---

@pytest.mark.parametrize("number, holds", [
    (signal.SIGINT, []),  # lands while main() parses its arguments and imports
    (signal.SIGTERM, [("utils.config", "load_config", 30.0)]),
], ids=["Ctrl-C-at-start-up", "SIGTERM-while-the-config-loads"])
def test_a_stop_before_the_run_starts_writes_nothing(cli, number, holds):
    run = cli(f"dataset.path={SAMPLES}", "run.id=early", holds=holds)
    run.wait_for_line("test: holding load_config" if holds else "test: main starts")
    run.stop(number)
    code = run.finish()
    assert code == 128 + number, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip() == "interrupted before the run started; nothing was written"
    assert not run.output_dir.exists()
