"""Files never half-written (utils/storage/atomic.py): a temporary beside the target replaces it whole, or is removed
and the target left as it was, with one message naming the path and the reason."""
import os

import pytest

from tests.support.full_disk import filling
from utils.storage.atomic import OutputWriteError, atomic_file, atomic_write_bytes, atomic_write_text, temporary_name


@pytest.fixture
def full_disk(monkeypatch):
    return filling(monkeypatch)


def test_a_write_replaces_the_target_whole_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "deep" / "er" / "env.json"  # its folders made on the way
    assert atomic_write_text(target, "first\n") == target and target.read_text() == "first\n"
    atomic_write_bytes(target, b"second")
    assert target.read_bytes() == b"second" and sorted(p.name for p in target.parent.iterdir()) == ["env.json"]
    assert temporary_name(target) == target.with_name(f".env.json.{os.getpid()}.tmp")


def test_a_failure_inside_the_block_leaves_the_target_as_it_was(tmp_path):
    target = tmp_path / "summary.json"
    atomic_write_text(target, "whole\n")
    with pytest.raises(RuntimeError, match="a bug"):
        with atomic_file(target) as handle:
            handle.write("half")
            raise RuntimeError("a bug")
    assert target.read_text() == "whole\n" and [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_target_that_cannot_be_written_names_the_path_and_the_reason(tmp_path):
    (tmp_path / "report.html").mkdir()
    with pytest.raises(OutputWriteError) as failure:
        atomic_write_text(tmp_path / "report.html", "<html>")
    assert str(failure.value) == f"could not write {tmp_path / 'report.html'}: Is a directory"
    assert failure.value.path == tmp_path / "report.html" and failure.value.status == 1
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_failed_rewrite_leaves_the_previous_file_whole(tmp_path, full_disk):
    target = tmp_path / "summary.json"
    atomic_write_text(target, '{"status": "running"}\n')
    full_disk("summary.json")
    with pytest.raises(OutputWriteError) as failure:
        atomic_write_text(target, '{"status": "complete", "a": "much longer document"}\n')
    assert str(failure.value) == f"could not write {target}: No space left on device"
    assert target.read_text() == '{"status": "running"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
