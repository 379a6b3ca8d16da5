"""Leaving the process past threads that a normal exit would crash on or wait for.

Some threads cannot be ended: a LoadGen server test keeps to its schedule after a stop, and Ray's client may sit
in a connection attempt that was given up on. Python's exit then aborts (LoadGen's threads are destroyed while
joinable) or crashes (Ray's client). A part that leaves such a thread behind registers it here as it does so;
benchmark.py calls `leave(status)` last, once everything is written, and the process ends with os._exit while one
is still alive.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

_left_running: list[Callable[[], bool]] = []  # each: whether a thread it left is still alive


def left_running(still_alive: Callable[[], bool]) -> None:
    """Register a thread (or anything else) that a normal exit must not wait for, by its liveness."""
    _left_running.append(still_alive)


def leave(status: int) -> int:
    """The exit status, after flushing the console; past a thread left running, the process ends here."""
    if any(alive() for alive in _left_running):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status
