"""The run record when outputs cannot be written: user settings (exit 2), failures (exit 1), a full disk at
every phase (the writers' own guarantees, with the fault injected into the real classes, are tested beside them:
tests/utils/storage/, tests/utils/detections/test_writer.py)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from benchmark import main
from tests.support.full_disk import filling
from tests.support.helpers import EVERY_PHASE as QUICK, assert_nothing_half_written, read_json, small_photos, utc
from utils.detections.writer import DETECTION_COLUMNS
from utils.reporting.run_writer import RunWriter


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    """Arguments of a short in-process run: two small photos, one timed pass, no hooked pass."""
    images = small_photos(tmp_path_factory.mktemp("two"), 2)
    return QUICK + ["--set", f"dataset.path={images}", "--set", "benchmark.repeats=1",
                    "--set", "benchmark.layer_timing=false", "--set", "outputs.plots=false",
                    "--set", "dataset.workers=0"]


@pytest.mark.slow
def test_an_output_dir_under_a_file_is_a_user_mistake(tmp_path, short, capsys):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    code = main(short + ["--set", f"run.output_dir={tmp_path / 'notes.txt' / 'runs'}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip() == (f"error: run.output_dir {tmp_path / 'notes.txt' / 'runs'} cannot be created: "
                           f"{tmp_path / 'notes.txt'} is a file, not a folder; point run.output_dir at a folder "
                           "(it is created when missing)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_file_that_cannot_be_replaced_at_the_end_fails_the_run_in_summary_json(tmp_path, short, capsys, monkeypatch):
    """A folder squats on report.html's name (created for real once the run has started; the file is written at
    the end only): the rename fails with EISDIR, the run fails with one message, and summary.json says so."""
    run_dir = tmp_path / "squat"
    real_start = RunWriter.write_start

    def start_then_squat(writer, *args, **kwargs):
        real_start(writer, *args, **kwargs)
        (run_dir / "report.html" / "squatter").mkdir(parents=True)

    monkeypatch.setattr(RunWriter, "write_start", start_then_squat)
    code = main(short + ["--set", f"run.output_dir={tmp_path}", "--set", "run.id=squat"])
    out, err = capsys.readouterr()
    assert code == 1, err
    message = f"could not write {run_dir / 'report.html'}: Is a directory"
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: {message}; summary.json says status: failed where it could still be written"]
    summary = read_json(run_dir / "summary.json")
    assert summary["status"] == "failed" and summary["stop_reason"] == message
    assert utc(summary["started_utc"]) <= utc(summary["ended_utc"])
    assert summary["images_processed"] == 2
    assert_nothing_half_written(run_dir)
    assert len(pd.read_csv(run_dir / "detections.csv").columns) == len(DETECTION_COLUMNS)


@pytest.fixture
def full_disk(monkeypatch):
    return filling(monkeypatch)


def target_of(written: str) -> Path:
    """`.name.<pid>.tmp` -> `name`, the file a temporary stands for; a file written under its own name (a
    journal) stands for itself."""
    path = Path(written)
    if not (path.name.startswith(".") and path.name.endswith(".tmp")):
        return path
    return path.with_name(path.name[1:].rsplit(".", 2)[0])


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_bug_mid_run_leaves_a_failed_record_and_its_traceback(tmp_path, monkeypatch):
    """Not a user's mistake: the exception propagates (its traceback is the report), but summary.json says
    failed with the cause, and what the first pass wrote is kept."""
    from pipelines.boxes.nms import NonMaxSuppression

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
