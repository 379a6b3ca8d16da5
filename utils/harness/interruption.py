"""How a run stops early: Ctrl-C and SIGTERM end the passes the same way, and neither may cut the writing of
the run record short.

A process started in the background by a non-interactive shell inherits SIGINT as ignored; that choice is
respected, never overridden.
"""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives (Ctrl-C raises KeyboardInterrupt itself)."""

    def __init__(self, signal_number: int):
        super().__init__(signal.Signals(signal_number).name)
        self.signal_number = signal_number


def exit_status(signal_number: int) -> int:
    """The shell's convention: 128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM)."""
    return 128 + signal_number


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
    """Inside: SIGTERM raises Stopped, like Ctrl-C raises KeyboardInterrupt, so cleanup runs for both."""
    def raise_stopped(number: int, _frame) -> None:
        raise Stopped(number)

    previous = _install(raise_stopped, (signal.SIGTERM,))
    try:
        yield
    finally:
        _restore(previous)


class DeferredStops:
    """Inside `deferred()`, Ctrl-C and SIGTERM are noted, announced once, and left for after the block."""

    def __init__(self, console: Callable[[str], None]):
        self.console = console
        self.received: Optional[int] = None

    def _note(self, number: int, _frame) -> None:
        if self.received is None:
            self.console(f"{signal.Signals(number).name} received: finishing the run record first, "
                         "then stopping (nothing already measured is lost)")
        self.received = self.received or number

    @contextmanager
    def deferred(self) -> Iterator["DeferredStops"]:
        previous = _install(self._note, STOP_SIGNALS)
        try:
            yield self
        finally:
            _restore(previous)
            sys.stderr.flush()
