"""The launcher seam: what the sweep driver hands a launcher (one PointJob per point) and gets back (one
PointOutcome per point, through a callback as each ends), and the stop signals they share.
"""
from __future__ import annotations

import json
import signal
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from utils.core.errors import UsageError
from utils.core.interruption import STOP_SIGNALS


class LauncherError(UsageError):
    """The launcher cannot run the sweep (an unreachable cluster, an unknown node, a missing package): a user's
    mistake found before anything runs, exit status 2."""


@dataclass(frozen=True)
class PointJob:
    name: str
    arguments: tuple[str, ...]  # benchmark.py's arguments (--config, --set ... run.id), all but run.output_dir
    run_dir: Path  # where the point's run directory must end up: <sweep directory>/<name>
    node: Optional[str] = None  # the machine(s) it is pinned to (`--sweep node=NAME`), None: any

    def command(self, python: str, script: str, output_dir: str) -> list[str]:
        # JSON strings are YAML strings: the path stays text whatever characters it holds.
        return [python, script, *self.arguments, "--set", f"run.output_dir={json.dumps(output_dir)}"]


@dataclass
class PointOutcome:
    returncode: Optional[int]  # benchmark.py's exit status; None when it never ran or its end is unknown
    stdout: str = ""
    stderr: str = ""
    lost: str = ""  # why there is no exit status (its node died, its task failed, it never started)
    stopped: bool = False  # the sweep's stop ended it or kept it from starting
    placement: dict = field(default_factory=dict)  # the launcher's columns of sweep.csv (where it ran)


Started = Callable[[PointJob, str], None]  # the job, and where it runs ("" for here)
Finished = Callable[[PointJob, PointOutcome], None]


class Stops:
    """Ctrl-C, SIGTERM and SIGHUP during the sweep: the first is passed on (`forward`), and every one is counted so that a
    launcher can act on a second one."""

    def __init__(self):
        self.received: Optional[int] = None
        self.count = 0
        self.forward: Optional[Callable[[int], None]] = None

    def _handle(self, number: int, _frame) -> None:
        self.count += 1
        first = self.received is None
        self.received = self.received or number
        if first and self.forward is not None:
            self.forward(number)

    @contextmanager
    def handled(self) -> Iterator["Stops"]:
        # A SIGINT ignored by the shell that started us (or SIGHUP under nohup) stays ignored, as in a single run.
        previous = {number: signal.signal(number, self._handle) for number in STOP_SIGNALS
                    if signal.getsignal(number) is not signal.SIG_IGN}
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


class Launcher(ABC):
    name: str
    columns: tuple[str, ...] = ()  # sweep.csv columns the launcher fills from PointOutcome.placement
    places_points: bool = False  # whether `--sweep node=...` means anything to it

    def open(self) -> None:
        """Reach whatever runs the points; raises LauncherError (exit status 2) before anything is written."""

    def check(self, jobs: list[PointJob]) -> None:
        """Refuse jobs it cannot place (LauncherError) before anything is written."""

    @abstractmethod
    def run(self, jobs: list[PointJob], stops: Stops, started: Started, finished: Finished) -> None:
        """Run the jobs, calling `started` and then `finished` once for each one that starts; returns when every
        job has ended or the sweep was stopped (jobs never started are left to the driver)."""

    def close(self) -> None:
        """Let go of what `open` reached; nothing of the sweep is left running."""

    def describe(self) -> dict:
        """How the points ran, for sweep.json."""
        return {"name": self.name}
