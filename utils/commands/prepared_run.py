"""How sweep, tune and capacity start: their runner made and prepared (every point, way or candidate validated)
with Ctrl-C and SIGTERM as KeyboardInterrupt, then run. A user's mistake at either stage ends as one line and its
exit status; a stop before the work began says that nothing was run."""
from __future__ import annotations

import sys
from typing import Callable, Protocol

from utils.core.errors import DetbenchError, ExitStatus
from utils.core.interruption import signal_of, stop_signals_interrupt


class Runner(Protocol):
    def prepare(self) -> None: ...

    def run(self) -> int: ...


def prepare_then_run(make_runner: Callable[[], Runner], stopped_before: str) -> int:
    """`stopped_before`: what a stop during preparation printed, e.g. "interrupted before the race started;
    nothing was run"."""
    try:
        with stop_signals_interrupt():
            runner = make_runner()
            runner.prepare()
    except DetbenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.status
    except KeyboardInterrupt as stop:
        print(stopped_before, file=sys.stderr)
        return ExitStatus.stopped_by(signal_of(stop))
    try:
        return runner.run()
    except DetbenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.status
