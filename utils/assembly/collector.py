"""Python's cyclic garbage collector around a run's start. Importing torch and the runtimes and building the
network allocate millions of objects that live as long as the run, and the collector would walk all of them
several times over while they load (about a second per process; benchmarks/overhead/startup_gc_pause.py measures it). It is
paused while they load, then they are collected once and frozen out of later collections, which the timed
passes then no longer pay for either; they are given back to the collector when the run ends, so that a next
run in the same process (tune's shared runs, a notebook) can free them."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def loading_without_collection() -> Iterator[None]:
    """A start that fails freezes nothing: the run that would have released it never comes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    except BaseException:
        if enabled:
            gc.enable()
        raise
    gc.collect()
    gc.freeze()
    if enabled:
        gc.enable()


def release_loaded() -> None:
    """What loading_without_collection() froze goes back to the collector."""
    gc.unfreeze()
