"""The two kinds of failure every command reports, and the exit statuses they end in.

A user's mistake (a config key, an argument, an input file) is a UsageError: exit status 2, one `error:` line
saying what and how to fix it, no traceback. A machine that cannot do what was asked (an output that cannot be
written, a missing dependency, a store that does not answer) is an EnvironmentFault: exit status 1, as for a
run that failed. Each kind carries its status, so a command maps any of them to its exit status in one place.

Standard library only: the command line imports this before it parses its arguments.
"""
from __future__ import annotations

import signal
import sys
from enum import IntEnum
from pathlib import Path
from typing import Callable, Optional


class ExitStatus(IntEnum):
    OK = 0
    FAILED = 1  # the environment failed, or the run did (summary.json says status: failed)
    USAGE = 2  # a mistake in the arguments, the config or the inputs
    HUNG_UP = 128 + signal.SIGHUP  # 129, the terminal closed or the ssh session dropped: the shell's 128 + the number
    INTERRUPTED = 128 + signal.SIGINT  # 130, Ctrl-C
    TERMINATED = 128 + signal.SIGTERM  # 143

    @classmethod
    def stopped_by(cls, signal_number: int) -> "ExitStatus":
        """The status of a command that a stop signal ended (only SIGHUP, SIGINT and SIGTERM stop a command)."""
        return cls(128 + signal_number)


# The statuses of a command that a stop signal ended: what it measured is kept.
STOPPED = frozenset({ExitStatus.HUNG_UP, ExitStatus.INTERRUPTED, ExitStatus.TERMINATED})


class DetbenchError(Exception):
    """A failure the command line reports as one `error:` line and an exit status, without a traceback."""

    status = ExitStatus.FAILED


class UsageError(DetbenchError):
    """A user's mistake: the message names the key, argument or file and says how to fix it."""

    status = ExitStatus.USAGE


class EnvironmentFault(DetbenchError):
    """The machine cannot do what was asked: the message names what is missing or broken."""

    status = ExitStatus.FAILED


class FailedRun(DetbenchError):
    """A run, or a program a command started, failed; the message names it and quotes its last words."""

    status = ExitStatus.FAILED


class MissingDependency(EnvironmentFault):
    """This Python lacks a package the project needs."""


PROJECT_ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = frozenset({"benchmarks", "datasets", "models", "pipelines", "utils"})


def missing_dependency(error: ModuleNotFoundError) -> Optional[MissingDependency]:
    """A missing third-party module as a setup instruction; None for a module of this project, which is a bug."""
    name = (error.name or "").split(".")[0]
    if not name or name in PROJECT_PACKAGES:
        return None
    venv_python = PROJECT_ROOT / ".venv" / "bin" / "python"
    if venv_python.exists() and Path(sys.executable).absolute() != venv_python.absolute():
        how = ("the project's environment is set up: run the command with .venv/bin/python (e.g. .venv/bin/python "
               "benchmark.py --config configs/samples.yaml)")
    else:
        how = ("set up the project's environment with `make install` (it creates .venv and installs the "
               "dependencies of pyproject.toml), then run the command with .venv/bin/python (e.g. .venv/bin/python "
               "benchmark.py --config configs/samples.yaml)")
    return MissingDependency(f"this Python ({sys.executable}) cannot import {name!r}, which detbench needs; {how}")


def command_status(main: Callable[[], Optional[int]]) -> int:
    """A command's exit status: a DetbenchError, a missing dependency or a stop signal becomes one line on stderr
    and its status, never a traceback; a main that returns nothing succeeded."""
    try:
        status = main()
    except DetbenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.status
    except ModuleNotFoundError as error:
        missing = missing_dependency(error)
        if missing is None:
            raise
        print(f"error: {missing}", file=sys.stderr)
        return missing.status
    except KeyboardInterrupt as stop:
        # Stopped (utils/core/interruption.py) carries the signal; Python's own Ctrl-C does not.
        number = getattr(stop, "signal_number", signal.SIGINT)
        print(f"interrupted ({signal.Signals(number).name})", file=sys.stderr)
        return ExitStatus.stopped_by(number)
    return ExitStatus.OK if status is None else status
