"""How a run stops early: Ctrl-C, SIGTERM and SIGHUP (the terminal closed, the ssh session dropped) end the
passes the same way, and nothing that follows the first stop (the cleanup of the passes, the writing of the run
record) may be cut short by another one.

A process started in the background by a non-interactive shell inherits SIGINT as ignored, and one started under
`nohup` SIGHUP; that choice is respected, never overridden.
"""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(KeyboardInterrupt):
    """Raised in the main thread when a stop signal ends the passes (or, for SIGTERM and SIGHUP, the start-up)."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


def signal_of(stop: KeyboardInterrupt) -> int:
    """The signal behind an interrupt; a KeyboardInterrupt raised by Python's own handler is Ctrl-C."""
    return stop.signal_number if isinstance(stop, Stopped) else signal.SIGINT


def _install(handler: Callable, signals: tuple[int, ...]) -> dict[int, object]:
    previous = {}
    for number in signals:
        current = signal.getsignal(number)
        if current is signal.SIG_IGN:
            continue
        previous[number] = signal.signal(number, handler)
    return previous


def _restore(previous: dict[int, object]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Inside: Ctrl-C, SIGTERM and SIGHUP raise Stopped, so cleanup runs for both. A stop whose raise Python dropped (its
    handler ran inside a finalizer or an at-fork callback: "Exception ignored in ...") is raised again on leaving,
    so the start-up it arrived in never goes on to a run."""
    raised: list[int] = []

    def raise_stopped(number: int, _frame) -> None:
        raised.append(number)
        raise Stopped(number)

    previous = _install(raise_stopped, STOP_SIGNALS)
    try:
        yield
    except KeyboardInterrupt:
        raised.clear()  # it arrived
        raise
    finally:
        _restore(previous)
    if raised:
        raise Stopped(raised[0])


class RunStops:
    """Ctrl-C, SIGTERM and SIGHUP over a whole run, from the start record to the last file written.

    Inside `ending_passes()`, the first stop raises Stopped in the main thread. Every other one (during the
    start record, during the cleanup that the first stop set off, while the record is written) is noted,
    announced once and acted on only when the record is complete.
    """

    def __init__(self, console: Callable[[str], None]):
        self.console = console
        self.received: Optional[int] = None
        self._raising = False
        self._announced = False
        # The stop raised inside ending_passes(), until it leaves them. Python drops an exception raised by a
        # handler that runs inside a finalizer or an at-fork callback ("Exception ignored in ..."), and the
        # passes would then run to their end: deliver() raises it again.
        self._raised: Optional[int] = None

    def _handle(self, number: int, _frame) -> None:
        if self._raising:
            self._raising = False  # a second stop must not cut short the cleanup this one starts
            self.received = self._raised = number
            raise Stopped(number)
        self.received = self.received or number
        if not self._announced:
            self._announced = True
            self.console(f"{signal.Signals(number).name} received: finishing the run record first, "
                         "then stopping (nothing already measured is lost)")

    @contextmanager
    def handled(self) -> Iterator["RunStops"]:
        previous = _install(self._handle, STOP_SIGNALS)
        try:
            yield self
        finally:
            _restore(previous)
            sys.stderr.flush()

    def deliver(self) -> None:
        """Raises the stop again where its first raise was dropped (see _raised): called between batches, and
        on leaving ending_passes()."""
        if self._raised is not None:
            number, self._raised = self._raised, None
            raise Stopped(number)

    @contextmanager
    def ending_passes(self) -> Iterator[None]:
        """Inside, the first stop raises Stopped; one noted before entering raises it on entry."""
        if self.received is not None:
            raise Stopped(self.received)
        self._raising = True
        try:
            yield
        except KeyboardInterrupt:
            self._raised = None  # it arrived
            raise
        finally:
            self._raising = False
        self.deliver()
