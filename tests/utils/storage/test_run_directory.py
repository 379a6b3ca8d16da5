"""The run directory (utils/storage/run_directory.py): claimed once and never overwritten, an output folder that
cannot be one refused as the user's mistake, and its files written whole."""
import json

import pytest

from utils.storage.run_directory import RunDirectory, RunDirectoryError, RunDirectoryExists


def test_run_directory_is_never_overwritten(tmp_path):
    run = RunDirectory(tmp_path / "outputs", "r1")
    run.create()
    run.write_csv("t.csv", [{"a": 1, "b": 2}], ["a", "b"])
    run.write_csv("empty.csv", [], ["a"])
    assert (run.path / "t.csv").read_text().splitlines() == ["a,b", "1,2"]
    assert (run.path / "empty.csv").read_text().strip() == "a"
    with pytest.raises(RunDirectoryExists, match="--set run.id="):
        RunDirectory(tmp_path / "outputs", "r1").create()
    assert (run.path / "t.csv").exists()


def test_an_output_dir_that_cannot_be_a_folder_is_the_users_mistake(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(RunDirectoryError, match=r"run.output_dir .*file/outputs cannot be created: .*file is a file"):
        RunDirectory(tmp_path / "file" / "outputs", "r1").create()
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(RunDirectoryError, match="is a dangling symbolic link, not a folder"):
        RunDirectory(tmp_path / "gone", "r1").create()
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "r2").symlink_to(tmp_path / "nowhere")
    with pytest.raises(RunDirectoryExists, match="r2 a dangling symbolic link and is never overwritten"):
        RunDirectory(tmp_path / "outputs", "r2").create()
    assert RunDirectoryExists.status == 2


def test_files_are_written_whole_under_the_run(tmp_path):
    run = RunDirectory(tmp_path, "r1")
    run.create()
    assert run.write_json("summary.json", {"when": tmp_path}) == run.path / "summary.json"
    assert json.loads(run.file("summary.json").read_text()) == {"when": str(tmp_path)}
    run.write_bytes("a.bin", b"\x00\x01")
    run.write_text("notes/b.txt", "b")
    assert run.file("a.bin").read_bytes() == b"\x00\x01" and run.file("notes/b.txt").read_text() == "b"
    assert sorted(path.name for path in run.path.iterdir()) == ["a.bin", "notes", "summary.json"]
