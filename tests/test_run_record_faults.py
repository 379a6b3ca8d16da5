"""The run record under faults: summary.json from the first moment of a run to the last, Ctrl-C and SIGTERM in
every phase, and outputs that cannot be written.

Stops are sent to real runs in subprocesses. Where a phase is too short to hit by timing alone, a wrapper script
(written per test) holds the run in it: it prints a marker and sleeps before calling the real function.
"""
import datetime as dt
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import pandas as pd
import pytest

import utils.writers.atomic
import utils.writers.detections
from benchmark import main
from utils.writers.atomic import OutputWriteError, atomic_write_text
from utils.writers.detections import DETECTION_COLUMNS, SKIPPED_COLUMNS, DetectionWriter
from utils.writers.run_writer import RunWriter

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "datasets" / "samples"
# yolov7-tiny at 160, unfused, no warm-up batch: the quickest run that still goes through every phase.
QUICK = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "preprocess.img_size=160",
         "--set", "model.fuse=false", "--set", "benchmark.warmup=0"]
IDENTITY = ("run_id", "model", "weights", "runtime", "schema_version", "detbench_version", "started_utc")
FINISHING = "finishing the run record first"
CSV_HEADERS = {"detections.csv": DETECTION_COLUMNS, "skipped.csv": SKIPPED_COLUMNS,
               "steps_timer.csv": ("step", "parent", "pass_kind", "pass_index", "batch", "images", "ms", "warmup",
                                   "start_s", "end_s", "cold_shape")}


def _small_photos(folder: Path, count: int) -> Path:
    photo = cv2.resize(cv2.imread(str(SAMPLES / "dog.jpg")), (192, 144))
    for i in range(count):
        cv2.imwrite(str(folder / f"{i:03d}.jpg"), photo)
    return folder


@pytest.fixture(scope="module")
def many_images(tmp_path_factory):
    """40 small photos: with benchmark.repeats=1000 a run goes on until it is stopped."""
    return _small_photos(tmp_path_factory.mktemp("many"), 40)


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    """Arguments of a short in-process run: two small photos, one timed pass, no hooked pass."""
    images = _small_photos(tmp_path_factory.mktemp("two"), 2)
    return QUICK + ["--set", f"dataset.path={images}", "--set", "benchmark.repeats=1",
                    "--set", "benchmark.layer_timing=false", "--set", "outputs.plots=false",
                    "--set", "dataset.workers=0"]


def utc(text: str) -> dt.datetime:
    moment = dt.datetime.fromisoformat(text)
    assert moment.utcoffset() == dt.timedelta(0), text
    return moment


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def assert_nothing_half_written(run_dir: Path) -> None:
    """No temporary left behind; every CSV parses with its whole header, every JSON parses."""
    assert not [p for p in run_dir.rglob(".*") if p.name.endswith(".tmp")]
    for path in (p for p in run_dir.rglob("*.csv") if p.is_file()):
        table = pd.read_csv(path)
        assert len(table.columns) > 0, path
        if path.name in CSV_HEADERS:
            assert tuple(table.columns) == CSV_HEADERS[path.name], path
    for path in run_dir.rglob("*.json"):
        assert read_json(path) is not None, path


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


def test_ctrl_c_at_a_terminal_and_more_stops_while_the_record_is_written(cli, many_images):
    """Ctrl-C at a terminal reaches the whole process group, DataLoader worker included. It ends the passes;
    a second Ctrl-C and a SIGTERM while the plots are drawn are noted, announced once, and wait until
    summary.json, the CSVs and the plots are all written."""
    began = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    run = long_run(cli, many_images, "twice", "outputs.plots=true", "dataset.batch_size=1",
                   holds=[("utils.writers.run_writer", "write_all_plots", 3.0)])
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


# --- outputs that cannot be written: user settings (exit 2) and failures (exit 1) ---

def test_an_output_dir_under_a_file_is_a_user_mistake(tmp_path, short, capsys):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    code = main(short + ["--set", f"run.output_dir={tmp_path / 'notes.txt' / 'runs'}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip() == (f"error: run.output_dir {tmp_path / 'notes.txt' / 'runs'} cannot be created: "
                           f"{tmp_path / 'notes.txt'} is a file, not a folder; point run.output_dir at a folder "
                           "(it is created when missing)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_dangling_symlink_as_run_id_is_a_user_mistake(tmp_path, short, capsys):
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    code = main(short + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=gone"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("error:") == 1 and "dangling symbolic link" in err and "run.id" in err, err
    assert not (tmp_path / "nowhere").exists() and (tmp_path / "gone").is_symlink()


def _deny_writes(folder: Path) -> str:
    """Makes `folder` refuse new entries for real. chmod does not stop root, an immutable flag does."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return "Permission denied"
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("running as root without a working `chattr +i` to make a folder refuse writes")
    return "Operation not permitted"


def _allow_writes(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o755)


def test_an_output_dir_that_refuses_writes_fails_before_the_run(tmp_path, short, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    cause = _deny_writes(locked)
    try:
        code = main(short + ["--set", f"run.output_dir={locked}", "--set", "run.id=r"])
    finally:
        _allow_writes(locked)
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.strip() == f"error: could not write {locked / 'r'}: {cause}"
    assert not any(locked.iterdir())


def test_a_run_directory_that_turns_read_only_mid_run_fails_with_one_message(tmp_path, short, capsys, monkeypatch):
    run_dir = tmp_path / "ro"
    real_start = RunWriter.write_start
    denied = {}

    def start_then_lock(writer, *args, **kwargs):
        real_start(writer, *args, **kwargs)
        denied["cause"] = _deny_writes(run_dir)

    monkeypatch.setattr(RunWriter, "write_start", start_then_lock)
    try:
        code = main(short + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=ro"])
    finally:
        _allow_writes(run_dir)
    out, err = capsys.readouterr()
    assert code == 1, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and denied["cause"] in errors[0] and str(run_dir) in errors[0], err
    # summary.json could not be rewritten: the one written at the start still stands, whole.
    assert read_json(run_dir / "summary.json")["status"] == "running"
    assert sorted(p.name for p in run_dir.iterdir()) == ["config.yaml", "env.json", "summary.json"]


def test_a_file_that_cannot_be_replaced_at_the_end_fails_the_run_in_summary_json(tmp_path, short, capsys, monkeypatch):
    """A folder squats on steps_timer.csv's name (created for real once the run has started): the rename
    fails with EISDIR, the run fails with one message, and summary.json says so."""
    run_dir = tmp_path / "squat"
    real_start = RunWriter.write_start

    def start_then_squat(writer, *args, **kwargs):
        real_start(writer, *args, **kwargs)
        (run_dir / "steps_timer.csv" / "squatter").mkdir(parents=True)

    monkeypatch.setattr(RunWriter, "write_start", start_then_squat)
    code = main(short + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=squat"])
    out, err = capsys.readouterr()
    assert code == 1, err
    message = f"could not write {run_dir / 'steps_timer.csv'}: Is a directory"
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: {message}; summary.json says status: failed where it could still be written"]
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "failed" and summary["stop_reason"] == message
    assert utc(summary["started_utc"]) <= utc(summary["ended_utc"])
    assert summary["images_processed"] == 2
    assert_nothing_half_written(run_dir)
    assert len(pd.read_csv(run_dir / "detections.csv").columns) == len(DETECTION_COLUMNS)


class FullDisk:
    """Stands in for `os` and `open` in the writers. The disk fills up while a file whose path contains
    `fills_at` is written: that write stops part-way with ENOSPC, as do all writes after it."""

    def __init__(self, fills_at):
        self.fills_at = fills_at
        self.full = False
        self.failed: list[str] = []

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, file, mode="r", *args, **kwargs):
        handle = open(file, mode, *args, **kwargs)
        if "w" in mode:
            real_write = handle.write

            def write(data):
                self.full = self.full or (self.fills_at is not None and self.fills_at in str(file))
                if self.full:
                    real_write(data[:len(data) // 2])
                    self.failed.append(str(file))
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_write(data)

            handle.write = write
        return handle


@pytest.fixture
def full_disk(monkeypatch):
    def fill(fills_at):
        disk = FullDisk(fills_at)
        for module in (utils.writers.atomic, utils.writers.detections):
            monkeypatch.setattr(module, "os", disk)
            monkeypatch.setattr(module, "open", disk.open, raising=False)
        return disk
    return fill


def target_of(temporary: str) -> Path:
    """`.name.<pid>.tmp` -> `name`, the file a temporary stands for."""
    path = Path(temporary)
    return path.with_name(path.name[1:].rsplit(".", 2)[0])


@pytest.mark.parametrize("fills_at", [None, "env.json", "detections.csv", "/images/", "steps_summary.csv"],
                         ids=["room-enough", "full-at-the-start", "full-as-the-passes-start", "full-mid-pass",
                              "full-at-the-end"])
def test_a_full_disk_ends_the_run_with_one_message_and_nothing_half_written(tmp_path, short, capsys, full_disk,
                                                                             fills_at):
    disk = full_disk(fills_at)
    code = main(short + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=full"])
    out, err = capsys.readouterr()
    run_dir = tmp_path / "full"
    summary = read_json(run_dir / "summary.json")
    assert_nothing_half_written(run_dir)
    if fills_at is None:
        assert code == 0 and not disk.failed, err
        assert summary["status"] == "complete" and summary["stop_reason"] is None
        assert utc(summary["started_utc"]) <= utc(summary["ended_utc"])
        assert summary["detbench_version"]
        return
    assert code == 1 and disk.failed, err
    # One message, about the file the disk filled up on (not about the files that then failed too).
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert errors == [f"error: could not write {target_of(disk.failed[0])}: No space left on device; "
                      "summary.json says status: failed where it could still be written"], err
    assert err.count("No space left") == 1, err
    # summary.json cannot be rewritten on a full disk: the one written at the start stands, whole.
    assert summary is None if fills_at == "env.json" else summary["status"] == "running"


# --- the writers' own guarantees, with the fault injected into the real classes ---

def test_a_failed_rewrite_leaves_the_previous_file_whole(tmp_path, full_disk):
    target = tmp_path / "summary.json"
    atomic_write_text(target, '{"status": "running"}\n')
    full_disk("summary.json")
    with pytest.raises(OutputWriteError) as failure:
        atomic_write_text(target, '{"status": "complete", "a": "much longer document"}\n')
    assert str(failure.value) == f"could not write {target}: No space left on device"
    assert target.read_text() == '{"status": "running"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def _detection_writer(run_path: Path) -> DetectionWriter:
    return DetectionWriter(run_path, run_path, ["thing"], save_images=False, note=None)


def test_a_detection_writer_that_cannot_start_leaves_no_temporary(tmp_path, monkeypatch):
    opened = []

    def second_open_fails(file, *args, **kwargs):
        if opened:
            raise OSError(errno.ENOSPC, "No space left on device")
        opened.append(file)
        return open(file, *args, **kwargs)

    monkeypatch.setattr(utils.writers.detections, "open", second_open_fails, raising=False)
    with pytest.raises(OutputWriteError, match="skipped.csv: No space left on device"):
        _detection_writer(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_detection_writer_whose_publishing_fails_leaves_no_temporary(tmp_path, monkeypatch):
    writer = _detection_writer(tmp_path)

    class NoRename:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def replace(source, target):
            raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(utils.writers.detections, "os", NoRename())
    with pytest.raises(OutputWriteError, match="detections.csv: Read-only file system"):
        writer.close()
    assert list(tmp_path.iterdir()) == []


def test_a_bug_mid_run_leaves_a_failed_record_and_its_traceback(tmp_path, monkeypatch):
    """Not a user's mistake: the exception propagates (its traceback is the report), but summary.json says
    failed with the cause, and what the first pass wrote is kept."""
    from pipelines.yolo.stages import NonMaxSuppression

    original, calls = NonMaxSuppression.forward, {"n": 0}

    def breaks_on_the_fourth_batch(self, prediction):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("simulated bug in NMS")
        return original(self, prediction)

    monkeypatch.setattr(NonMaxSuppression, "forward", breaks_on_the_fourth_batch)
    with pytest.raises(RuntimeError, match="simulated bug"):
        main(QUICK + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=bug", "--set", "dataset.batch_size=2",
                      "--set", "benchmark.repeats=2", "--set", "outputs.plots=false"])
    run = tmp_path / "bug"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "failed" and "simulated bug in NMS" in summary["stop_reason"]
    assert summary["ended_utc"] is not None
    assert len(pd.read_csv(run / "detections.csv", dtype=str).columns) == len(DETECTION_COLUMNS)
    assert not list(run.glob(".*.tmp"))
