"""Pinning every compute thread, and reading back each thread's affinity.

`os.sched_setaffinity(0, cores)` sets the calling thread's mask only: an OpenMP pool that already exists keeps
its own. torch's intra-op pool (libgomp in the PyPI wheels) is pinned from inside: a parallel region entered
through the OpenMP runtime torch loaded runs a callback on every thread of the calling thread's team, and each
thread sets its own mask there. libgomp keeps a team's threads for the next region of the same size, which is
the pool torch's operators then run on.
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Iterable, Optional, Sequence

from pipelines.runtimes.base import RuntimeNotSupported

OPENMP_LIBRARIES = ("libgomp", "libiomp5")


def thread_affinities(pid: str | int = "self") -> list[dict]:
    """Every thread of a process with its name and the cores it may run on (Cpus_allowed_list), by thread id."""
    threads = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda path: int(path.name)):
        try:
            status = (task / "status").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        threads.append({"tid": int(task.name), "name": fields.get("Name", "").strip(),
                        "cpus": fields.get("Cpus_allowed_list", "").strip()})
    return threads


def loaded_openmp() -> Optional[str]:
    """The OpenMP runtime this process has loaded (torch's own copy), or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if any(Path(path).name.startswith(name) for name in OPENMP_LIBRARIES):
                return path
    return None


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def pin_openmp_team(cores: Sequence[int]) -> list[dict]:
    """Pins the calling thread and its OpenMP team of len(cores) threads one to a core: team thread i to
    cores[i] (thread 0 is the caller). Returns what each thread did: its OpenMP number, thread id and core."""
    library = loaded_openmp()
    if library is None:
        raise RuntimeNotSupported("runtime.pinning: torch runs no OpenMP pool here (no libgomp or libiomp5 "
                                  "loaded), so its threads cannot be pinned; remove runtime.pinning")
    openmp = ctypes.CDLL(library)  # the handle of the copy already loaded; CDLL calls release the GIL
    openmp.omp_get_thread_num.restype = ctypes.c_int
    openmp.GOMP_parallel.argtypes = [_CALLBACK, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
    pinned: list[dict] = []
    lock = threading.Lock()

    def pin(_: Optional[int]) -> None:
        number = openmp.omp_get_thread_num()
        if number < len(cores):
            os.sched_setaffinity(0, {cores[number]})
            with lock:
                pinned.append({"openmp_thread": number, "tid": threading.get_native_id(), "core": cores[number]})

    callback = _CALLBACK(pin)
    openmp.GOMP_parallel(callback, None, len(cores), 0)
    if len(pinned) != len(cores):
        raise RuntimeNotSupported(f"runtime.pinning: the OpenMP runtime gave a team of {len(pinned)} thread(s) "
                                  f"for {len(cores)} core(s); remove runtime.pinning")
    return sorted(pinned, key=lambda entry: entry["openmp_thread"])


def pin_torch_pool(cores: Sequence[int]) -> list[dict]:
    """For runtimes outside torch: the torch ops around their forward (letterbox, NMS) run on the calling thread
    and torch's pool, pinned here onto the run's cores too."""
    import torch

    return pin_openmp_team(list(cores)[:max(1, min(torch.get_num_threads(), len(cores)))])


def pin_calling_thread(core: int) -> dict:
    """The calling thread alone on one core (a runtime's caller that runs work of its own pool)."""
    os.sched_setaffinity(0, {core})
    return {"tid": threading.get_native_id(), "core": core}


def restore_affinities(tids: Iterable[int], cores: set[int]) -> None:
    """Gives the threads of this process among `tids` back the cores they may run on (`cores`: the process's
    mask before pinning). A thread that ended is skipped: its id may name another process's thread by now."""
    alive = {int(task.name) for task in Path("/proc/self/task").iterdir()}
    for tid in set(tids) & alive:
        try:
            os.sched_setaffinity(tid, cores)
        except OSError:  # it ended between the listing and the call
            continue
