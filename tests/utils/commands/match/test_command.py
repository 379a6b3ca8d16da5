"""`benchmark.py match`'s command line (utils/commands/match/command.py): its arguments, the exit status and the
one line of each way it ends (the search stood in for by a fake), and the refusals it makes from the config
before any network is loaded."""
from __future__ import annotations

import signal

import numpy as np
import pytest

from utils.commands.match import command
from utils.commands.match.command import DEFAULT_TRIES, match_main, parse_args
from utils.core.errors import DetbenchError, ExitStatus, UsageError
from utils.core.interruption import Stopped
from tests.support.tflite_models import shifted_outputs


def test_the_arguments_and_their_defaults():
    args = parse_args(["--config", "c.yaml", "--against", "theirs.csv", "--set", "a=1", "--set", "b=2"])
    assert (args.config, args.against, args.overrides, args.tries) == ("c.yaml", "theirs.csv", ["a=1", "b=2"],
                                                                       DEFAULT_TRIES)
    with pytest.raises(SystemExit):
        parse_args(["--config", "c.yaml"])  # --against is required


def fake_match(outcome):
    def _match(args):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
    return _match


def ends(monkeypatch, capsys, outcome, *extra):
    monkeypatch.setattr(command, "_match", fake_match(outcome))
    status = match_main(["--config", "c.yaml", "--against", "theirs.csv", *extra])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_report_is_printed_and_the_status_is_ok(monkeypatch, capsys):
    assert ends(monkeypatch, capsys, "the report") == (ExitStatus.OK, "the report\n", "")


def test_fewer_than_one_try_is_refused_before_anything_runs(monkeypatch, capsys):
    status, out, err = ends(monkeypatch, capsys, AssertionError("the search ran"), "--tries", "0")
    assert status == ExitStatus.USAGE and out == ""
    assert err == "error: match: --tries 0: give at least 1\n"


@pytest.mark.parametrize("error, status", [(UsageError("bad key"), ExitStatus.USAGE),
                                           (DetbenchError("runtime failed"), ExitStatus.FAILED)])
def test_an_error_is_one_line_with_its_status(monkeypatch, capsys, error, status):
    assert ends(monkeypatch, capsys, error) == (status, "", f"error: match: {error}\n")


@pytest.mark.parametrize("stop, status", [(KeyboardInterrupt(), ExitStatus.INTERRUPTED),
                                          (Stopped(signal.SIGTERM), ExitStatus.TERMINATED)])
def test_a_stop_writes_nothing_and_gives_the_signals_status(monkeypatch, capsys, stop, status):
    assert ends(monkeypatch, capsys, stop) == (status, "", "match: interrupted; nothing was written\n")


def config(tmp_path, model: str, batch_size: int = 1, backend: str = "torch"):
    (tmp_path / "images").mkdir(exist_ok=True)
    path = tmp_path / "config.yaml"
    path.write_text(f"model:\n  {model}\ndataset:\n  path: {tmp_path / 'images'}\n  batch_size: {batch_size}\n"
                    f"runtime:\n  backend: {backend}\n")
    return str(path)


def test_a_detector_detbench_builds_is_refused(tmp_path, capsys):
    status = match_main(["--config", config(tmp_path, "arch: yolov7-tiny"), "--against", "theirs.csv"])
    assert status == ExitStatus.USAGE
    assert "match tries the recipes of a detector given as a file" in capsys.readouterr().err


def test_a_batch_of_more_than_one_image_is_refused(tmp_path, capsys):
    # The config reads the file's declared shapes (a small TFLite graph of a dynamic batch); no network is loaded.
    file = shifted_outputs(tmp_path / "model.tflite", [np.zeros((1, 6, 10), np.float32)], ["Identity"], (1, 16, 16, 3),
                           signature=(-1, 16, 16, 3))
    status = match_main(["--config", config(tmp_path, f"file: {file}", batch_size=4, backend="litert"),
                         "--against", "theirs.csv"])
    assert status == ExitStatus.USAGE
    assert "dataset.batch_size 4: match feeds one image at a time" in capsys.readouterr().err
