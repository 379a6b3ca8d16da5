"""A CSV written as a run goes (utils/storage/streamed_csv.py): the header at once, rows by column name batch by
batch under the file's real name (a killed run keeps them), published synced, and a write that fails removes the
file rather than leave a row cut in half."""
import csv
import errno

import pytest

from utils.storage.atomic import OutputWriteError
from utils.storage.streamed_csv import StreamedCsv


def rows_of(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def test_rows_reach_the_file_batch_by_batch_and_a_missing_column_is_empty(tmp_path):
    target = tmp_path / "steps.csv"
    table = StreamedCsv(target, ["step", "ms", "note"])
    assert rows_of(target) == [["step", "ms", "note"]]  # the header is on disk before any row
    table.append([{"step": "load", "ms": 1.5}, {"step": "forward", "ms": 20, "note": "a, quoted"}])
    assert rows_of(target)[1:] == [["load", "1.5", ""], ["forward", "20", "a, quoted"]]
    table.write(["nms", 2, ""])
    assert len(rows_of(target)) == 3  # pending until the next flush
    table.publish()
    assert rows_of(target)[-1] == ["nms", "2", ""] and table.handle.closed
    table.publish()
    table.close()  # once closed, both do nothing


def test_a_cut_write_removes_the_file(tmp_path, monkeypatch):
    target = tmp_path / "memory.csv"
    table = StreamedCsv(target, ["rss"])
    real_write = table.handle.write

    def half_then_full(text):
        real_write(text[:len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(table.handle, "write", half_then_full, raising=False)
    with pytest.raises(OutputWriteError, match="memory.csv: No space left on device"):
        table.append([{"rss": 12345678}])
    assert not target.exists()


def test_a_file_that_cannot_be_opened_is_one_message(tmp_path):
    with pytest.raises(OutputWriteError, match="could not write .*missing/x.csv: No such file or directory"):
        StreamedCsv(tmp_path / "missing" / "x.csv", ["a"])
