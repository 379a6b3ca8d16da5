"""utils.preflight.cgroup_files: reading one of the cgroup's limit files: its text stripped, or None where the file
is absent or unreadable (no such controller, no limit).

Tested on temporary files standing in for cgroup files."""
from utils.preflight.cgroup_files import read_value


def test_a_value_is_read_without_its_newline(tmp_path):
    limit = tmp_path / "memory.max"
    limit.write_text("536870912\n")
    assert read_value(limit) == "536870912"


def test_a_missing_or_unreadable_file_is_none(tmp_path):
    assert read_value(tmp_path / "cpu.max") is None
    assert read_value(tmp_path) is None  # a folder cannot be read as text
