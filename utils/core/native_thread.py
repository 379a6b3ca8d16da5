"""The kernel's name for the calling thread, so that /proc, perf, py-spy and cpu_counters.csv tell detbench's
threads apart (Python before 3.14 leaves every thread named after the process)."""
from __future__ import annotations

import ctypes
import ctypes.util
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
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc.prctl(PR_SET_NAME, name.encode()[:NAME_BYTES], 0, 0, 0) == 0
