"""The kernel's name for the calling thread, so that /proc, perf, py-spy and cpu_counters.csv tell detbench's
threads apart (Python before 3.14 leaves every thread named after the process)."""
from __future__ import annotations

import ctypes
import sys
from typing import Optional

PR_SET_NAME = 15
NAME_BYTES = 15  # the kernel keeps 16 bytes, the last a NUL

_libc: Optional[ctypes.CDLL] = None


def name_this_thread(name: str) -> bool:
    """Sets the calling thread's kernel name (cut to NAME_BYTES); False where the platform has no prctl."""
    global _libc
    if not sys.platform.startswith("linux"):
        return False
    if _libc is None:
        _libc = _open_libc()
    return _libc.prctl(PR_SET_NAME, name.encode()[:NAME_BYTES], 0, 0, 0) == 0


def _open_libc() -> ctypes.CDLL:
    """libc by its soname, never by ctypes.util.find_library: that runs ldconfig in a subprocess, and a process
    forked meanwhile (a DataLoader worker) inherits its pipe, so the naming thread waited on it for good."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # a libc other than glibc: prctl is among the process's own symbols
        return ctypes.CDLL(None, use_errno=True)
