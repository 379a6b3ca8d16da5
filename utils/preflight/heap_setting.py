"""`runtime.allocator`: leave malloc as the process started (`inherit`), or make glibc keep the memory it frees
(`keep_heap`), so that a forward's activations are not faulted in and zeroed afresh each time
(utils.measure.below_layer.page_faults, docs/below-the-layer.md).

keep_heap is what GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=... does at start-up, set
with mallopt(3) once the config is read: no block is served by a fresh mmap, and no free memory at the top of the
heap goes back to the kernel. mallopt's value is a C int, so the trim threshold is 2 GiB - 1 rather than the
tunable's 16 GiB; a detector's freed activations come nowhere near it. Blocks mapped before the call (the
interpreter's and the libraries' own) stay mapped; what the model and the passes allocate afterwards comes from
the heap. The setting is process-wide and cannot be undone: a run is its own process.
"""
from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Mapping

from utils.core.errors import UsageError
from utils.measure.below_layer.page_faults import Allocator, allocator_of, preloaded_allocator

KEEP_HEAP = "keep_heap"
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # malloc.h
TRIM_THRESHOLD = 2**31 - 1


def keep_heap_refusal(environ: Mapping[str, str], libc: str, maps: str | None = None) -> str | None:
    """Why keep_heap cannot apply in this process, or None. `maps`: /proc/self/maps (utils.measure.below_layer.page_faults)."""
    if libc != "glibc":
        return (f"runtime.allocator keep_heap sets glibc's malloc, and this Python runs on "
                f"{libc or 'another C library'}; remove the key (inherit)")
    preloaded = preloaded_allocator(environ, maps)
    if preloaded is not None:
        return (f"runtime.allocator keep_heap sets glibc's malloc, but LD_PRELOAD loads {preloaded}, which "
                f"serves the allocations instead; use one or the other")
    return None


def process_maps() -> str | None:
    try:
        return Path("/proc/self/maps").read_text()
    except OSError:
        return None


def apply_allocator(setting: str, environ: Mapping[str, str] = os.environ, libc: str | None = None,
                    maps: str | None = None) -> Allocator:
    """Applies runtime.allocator and returns the allocator the run then has. Raises UsageError when
    keep_heap cannot apply here. `libc` and `maps` default to this process's."""
    libc = platform.libc_ver()[0] if libc is None else libc
    maps = process_maps() if maps is None else maps
    if setting != KEEP_HEAP:
        return allocator_of(environ, libc, maps=maps)
    refusal = keep_heap_refusal(environ, libc, maps)
    if refusal is not None:
        raise UsageError(refusal)
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    for parameter, value, name in ((M_MMAP_MAX, 0, "M_MMAP_MAX"), (M_TRIM_THRESHOLD, TRIM_THRESHOLD,
                                                                      "M_TRIM_THRESHOLD")):
        if mallopt(parameter, value) != 1:
            raise UsageError(f"runtime.allocator keep_heap: glibc refused mallopt({name}, {value}); remove the "
                             f"key (inherit)")
    return allocator_of(environ, libc, keep_heap=True, maps=maps)
