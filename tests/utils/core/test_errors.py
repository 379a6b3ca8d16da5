"""The two kinds of failure and their exit statuses (utils/core/errors.py): a command's status from what it raised,
one `error:` line and no traceback; a stop signal's status; a missing package as a setup instruction, a missing
module of the project as the bug it is."""
import signal
import sys

import pytest

from utils.core.errors import (STOPPED, DetbenchError, EnvironmentFault, ExitStatus, FailedRun, UsageError,
                               command_status, missing_dependency)
from utils.core.interruption import Stopped


def raising(error):
    def main():
        raise error
    return main


@pytest.mark.parametrize("error, status", [(UsageError("model.arch 'x' is not known"), 2),
                                           (EnvironmentFault("outputs/ is read-only"), 1),
                                           (FailedRun("the run failed"), 1), (DetbenchError("plain"), 1)])
def test_each_kind_of_failure_is_one_line_and_its_status(capsys, error, status):
    assert command_status(raising(error)) == status
    assert capsys.readouterr().err == f"error: {error}\n"


def test_a_main_that_returns_nothing_succeeded_and_one_that_returns_a_status_keeps_it():
    assert command_status(lambda: None) == ExitStatus.OK and command_status(lambda: 3) == 3


def test_a_stop_signal_ends_in_128_plus_its_number(capsys):
    assert command_status(raising(KeyboardInterrupt())) == ExitStatus.INTERRUPTED == 130
    assert capsys.readouterr().err == "interrupted (SIGINT)\n"
    assert command_status(raising(Stopped(signal.SIGTERM))) == ExitStatus.TERMINATED == 143
    assert ExitStatus.stopped_by(signal.SIGHUP) == ExitStatus.HUNG_UP == 129
    assert STOPPED == {ExitStatus.HUNG_UP, ExitStatus.INTERRUPTED, ExitStatus.TERMINATED}


def test_a_missing_package_is_a_setup_instruction_and_a_missing_project_module_a_bug(capsys):
    absent = ModuleNotFoundError("No module named 'pyjoules'", name="pyjoules.device")
    missing = missing_dependency(absent)
    assert missing.status == ExitStatus.FAILED and "cannot import 'pyjoules', which detbench needs" in str(missing)
    assert sys.executable in str(missing) and ".venv/bin/python" in str(missing)
    assert command_status(raising(absent)) == 1 and "error: this Python" in capsys.readouterr().err
    ours = ModuleNotFoundError("No module named 'utils.gone'", name="utils.gone")
    assert missing_dependency(ours) is None
    with pytest.raises(ModuleNotFoundError):
        command_status(raising(ours))
