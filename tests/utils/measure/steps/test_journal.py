"""The run's journal (utils/measure/steps/journal.py): steps_timer.csv appended batch by batch, each whole, and the
memory rows pass by pass, so that a killed run keeps what it measured; a journal the disk refuses removed rather
than left half-written."""
import threading

import pandas as pd
import pytest

from utils.record.steps import STEP_TIMER_COLUMNS, PassKind, StepRecord
from utils.storage.atomic import OutputWriteError
from utils.measure.steps.journal import RowJournal, RunJournal


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


def test_rows_appended_from_several_threads_are_on_disk_whole_at_once(tmp_path):
    journal = RowJournal(tmp_path / "frames.csv", ("stream", "frame"))
    threads = [threading.Thread(target=lambda name=name: [journal.append([{"stream": name, "frame": index}])
                                                          for index in range(50)]) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = pd.read_csv(tmp_path / "frames.csv")  # before close: each append reached the operating system
    assert len(rows) == 100 and sorted(rows[rows["stream"] == "b"]["frame"]) == list(range(50))
    journal.append([])
    journal.close()
    assert (tmp_path / "frames.csv").read_text().count("\n") == 101
