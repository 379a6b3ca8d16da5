"""A killed run's directory: the journal that keeps its batches on disk as they end, and how it reads back
(whole runs killed for real are in test_fault_injection.py)."""
import csv
import io
import json
from types import SimpleNamespace

import pandas as pd
import pytest

from utils.storage.finished_run import FinishedRun
from utils.record.steps import STEP_TIMER_COLUMNS, PassKind, StepRecord
from utils.commands.sweep.driver import PointResult, RoundRun, settle_run
from utils.launchers.base import PointOutcome, Stops
from utils.commands.sweep.plan import Point
from utils.commands.tune.driver import Tune
from utils.commands.tune.state import Run
from utils.storage.atomic import OutputWriteError
from utils.measure.steps.journal import RunJournal


def record(step, kind, index, batch, start_ms, end_ms, parent="pipeline"):
    return StepRecord(step, parent, kind, index, batch, 2, int(start_ms * 1e6), int(end_ms * 1e6))


def batch(kind, index, number, start_ms):
    """A batch as the timer records it: load, forward, then its pipeline step."""
    return [record("load", kind, index, number, start_ms, start_ms + 1),
            record("forward", kind, index, number, start_ms + 1, start_ms + 4),
            record("pipeline", kind, index, number, start_ms, start_ms + 4, parent="run")]


def test_the_journal_appends_each_batch_whole_and_the_memory_rows_per_pass(tmp_path):
    records, samples = [], []
    journal = RunJournal(tmp_path / "steps_timer.csv", records, 0,
                         [(tmp_path / "memory.csv", ("t_s", "rss_mb"), lambda start: samples[start:])])
    records += batch(PassKind.WARMUP, 0, 0, 0.0)
    journal.batch_ended()
    steps = pd.read_csv(tmp_path / "steps_timer.csv")
    assert tuple(steps.columns) == STEP_TIMER_COLUMNS
    assert list(steps["step"]) == ["load", "forward", "pipeline"]
    assert list(steps["ms"]) == pytest.approx([1.0, 3.0, 4.0])
    assert steps["warmup"].all() and list(steps["start_s"]) == pytest.approx([0.0, 0.001, 0.0])
    samples += [{"t_s": 0.5, "rss_mb": 700.0}, {"t_s": 1.0, "rss_mb": 710.0}]
    records += batch(PassKind.TIMED, 0, 0, 10.0)
    journal.pass_ended()  # the rows not written yet, and the timeline's new samples
    samples.append({"t_s": 1.5, "rss_mb": 720.0})
    journal.pass_ended()
    assert len(pd.read_csv(tmp_path / "steps_timer.csv")) == 6
    assert pd.read_csv(tmp_path / "memory.csv").to_dict("list") == {"t_s": [0.5, 1.0, 1.5],
                                                                    "rss_mb": [700.0, 710.0, 720.0]}
    journal.close()
    journal.batch_ended()  # closed: nothing more is written, nothing fails
    assert (tmp_path / "steps_timer.csv").read_text().endswith("\n")


def test_a_journal_the_disk_refuses_is_removed_not_left_half_written(tmp_path, monkeypatch):
    records = []
    journal = RunJournal(tmp_path / "steps_timer.csv", records, 0)
    handle = journal.steps.file.handle
    real_write = handle.write

    def half_then_full(text):
        real_write(text[:len(text) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(handle, "write", half_then_full, raising=False)
    records += batch(PassKind.TIMED, 0, 0, 0.0)
    with pytest.raises(OutputWriteError, match="steps_timer.csv: No space left on device"):
        journal.batch_ended()
    assert list(tmp_path.iterdir()) == []


def killed_directory(folder, steps_text):
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"status": "running", "stop_reason": None}))
    (folder / "steps_timer.csv").write_text(steps_text)
    return folder


def steps_text(batches):
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(STEP_TIMER_COLUMNS)
    for kind, index, number, ms in batches:
        writer.writerow(["pipeline", "run", kind, index, number, 2, ms, kind == "warmup", 0.0, ms / 1e3, False])
    return text.getvalue()


def test_a_killed_directory_reads_as_killed_up_to_its_last_whole_batch(tmp_path):
    """The journal of a run killed mid-write (a power cut) ends in a line cut short: it is left out."""
    whole = steps_text([("warmup", 0, 0, 9.0), ("timed", 0, 0, 4.0), ("timed", 0, 1, 6.0), ("timed", 1, 0, 5.0)])
    run = FinishedRun(killed_directory(tmp_path / "killed", whole + "pipeline,run,timed,1,1,2,7.2"))
    assert run.killed
    assert run.per_image_samples() == [2.0, 3.0, 2.5]
    assert run.holds_until() == "timed pass 2, batch 0 (3 timed batch(es) in all)"
    assert run.killed_note() == (f"{run.path} was killed before it wrote its record (summary.json still says "
                                 "running): its files hold what it measured up to the timed pass 2, batch 0 (3 "
                                 "timed batch(es) in all)")


def test_a_run_killed_before_its_first_batch_says_so(tmp_path):
    run = FinishedRun(killed_directory(tmp_path / "early", steps_text([])))
    assert run.killed and run.holds_until() == "before its first batch (no batch was timed)"
    (run.path / "steps_timer.csv").unlink()
    assert run.holds_until() == "before its first batch (no batch was timed)"


def test_a_finished_run_is_not_killed(tmp_path):
    folder = killed_directory(tmp_path / "done", steps_text([("timed", 0, 0, 4.0)]))
    (folder / "summary.json").write_text(json.dumps({"status": "interrupted", "stop_reason": "SIGHUP"}))
    assert not FinishedRun(folder).killed


KILLED_STEPS = [("warmup", 0, 0, 9.0), ("timed", 0, 0, 4.0), ("timed", 0, 1, 6.0)]


def test_a_sweep_point_killed_by_a_signal_says_where_it_holds_and_shows_its_batches_unranked(tmp_path):
    folder = killed_directory(tmp_path / "point", steps_text(KILLED_STEPS))
    point = Point("point", (("benchmark.repeats", "3"),))
    result = PointResult(point, [RoundRun(1, folder)])
    settle_run(tmp_path, point, result.runs[0], PointOutcome(-9), Stops())
    result.settle()
    assert result.status == "failed"
    assert result.reason == ("killed by SIGKILL: no error output; " + FinishedRun(folder).killed_note())
    assert "timed pass 1, batch 1 (2 timed batch(es) in all)" in result.reason
    assert result.figures_row["p50_ms_per_image"] == 2.5  # (2 + 3) / 2 ms per image, from its two timed batches
    assert result.figures is None  # figures the answer could rank: none


def test_a_sweep_point_that_failed_on_its_own_is_not_read_as_killed(tmp_path):
    folder = killed_directory(tmp_path / "point", steps_text(KILLED_STEPS))
    point = Point("point", (("benchmark.repeats", "3"),))
    run = RoundRun(1, folder)
    settle_run(tmp_path, point, run, PointOutcome(1, stderr="error: disk full"), Stops())
    assert run.status == "failed" and "killed" not in run.reason and run.figures_row == {}


def test_tunes_resume_marks_a_run_killed_with_the_race_stopped_saying_where_it_holds(tmp_path):
    killed_directory(tmp_path / "killed", steps_text(KILLED_STEPS))
    written = killed_directory(tmp_path / "written", steps_text(KILLED_STEPS))
    (written / "summary.json").write_text(json.dumps({"status": "complete", "stop_reason": None}))
    race = SimpleNamespace(directory=SimpleNamespace(path=tmp_path))
    runs = {name: Run("torch fp32", 1, False, name) for name in ("killed", "written", "absent")}
    for run in runs.values():
        Tune._settle_killed(race, run)
    assert {run.status for run in runs.values()} == {"stopped"}
    assert runs["killed"].reason == "killed with the race; " + FinishedRun(tmp_path / "killed").killed_note()
    assert runs["written"].reason == "the race was killed as it ended (complete)"
    assert runs["absent"].reason.startswith("killed with the race before it wrote anything readable (")
