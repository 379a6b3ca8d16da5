"""The OpenVINO CPU plugin and the calling thread's alternate signal stack.

Each Core's CPU plugin (its SigAltStackSetup, for AMX: openvinotoolkit/openvino#11894), when it loads, gives the thread that loads it an alternate signal stack of its own and,
when it unloads, puts back the one it found there, freeing its own. Plugins unloaded in another order than
they loaded leave the thread on a freed stack. Python's signal handlers run on that stack, so the next Ctrl-C,
SIGTERM or SIGCHLD handled in Python then kills the process with SIGSEGV instead of stopping the run.

So the process keeps one Core whose plugin never unloads (`shared_core`), and work that makes Cores of its own
(NNCF's quantization) runs inside `kept_signal_stack`, which puts the thread's stack back when it is done.
"""
from __future__ import annotations

import ctypes
import functools
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

import openvino as ov

SS_ONSTACK = 1


class _SignalStack(ctypes.Structure):
    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int), ("ss_size", ctypes.c_size_t)]


@functools.lru_cache(maxsize=None)
def _libc() -> Optional[ctypes.CDLL]:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:  # no C library to ask (Windows): no alternate signal stacks either
        return None


def current_signal_stack() -> Optional[tuple[int, int, int]]:
    """The calling thread's alternate signal stack: (address, size, flags), or None where it cannot be read."""
    libc, stack = _libc(), _SignalStack()
    if libc is None or libc.sigaltstack(None, ctypes.byref(stack)) != 0:
        return None
    return stack.ss_sp or 0, stack.ss_size, stack.ss_flags


@contextmanager
def kept_signal_stack() -> Iterator[None]:
    """The calling thread's alternate signal stack as it was on entry, put back on exit, after the Cores made
    inside have been collected (their plugins unload then)."""
    libc, saved = _libc(), _SignalStack()
    readable = libc is not None and libc.sigaltstack(None, ctypes.byref(saved)) == 0
    try:
        yield
    finally:
        gc.collect()
        if readable and not saved.ss_flags & SS_ONSTACK:
            libc.sigaltstack(ctypes.byref(saved), None)


@functools.lru_cache(maxsize=None)
def shared_core() -> ov.Core:
    """The process's one Core. Every property is given at compile_model, so runs with other settings share it."""
    return ov.Core()
