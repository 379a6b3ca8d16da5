"""How `runtime.streams` and `runtime.pinning` divide the cores: pure arithmetic each runtime applies its own way.

Streams are requests in flight at once (OpenVINO's NUM_STREAMS; for ONNX Runtime and torch, worker threads
each running a forward); the run's threads are split between them. Pinning ties the compute threads to cores
so the OS does not move them.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Optional, Sequence

import torch

from pipelines.runtimes.base import RuntimeNotSupported


TORCH_OWN_THREADS = torch.get_num_threads()  # torch's default, before a runtime shares threads out
AUTO = "auto"
AUTO_ONE_REQUEST = "auto:single_stream"  # auto where one request at a time is in flight
ONE_REQUEST = "auto in single_stream: one request is in flight at a time, and one stream takes every thread"


def scenario_streams(streams, scenario: str):
    """runtime.streams as the runtime gets it: `auto` under single_stream is one stream (AUTO_ONE_REQUEST, which
    the runtime reports), since a second stream would only take threads from the one request."""
    return AUTO_ONE_REQUEST if streams == AUTO and scenario == "single_stream" else streams


def auto_choice(streams, runtime_choice: int, why: str) -> tuple[int, dict | None]:
    """(the streams to run, summary.json runtime.streams_auto) for what the config asked."""
    if streams == AUTO_ONE_REQUEST:
        return 1, {"asked": AUTO, "resolved": 1, "why": ONE_REQUEST}
    if streams == AUTO:
        return runtime_choice, {"asked": AUTO, "resolved": runtime_choice, "why": why}
    return streams, None


def threads_per_stream(threads: int, streams: int) -> int:
    """The run's threads split evenly between the streams; each stream needs one at least."""
    if streams > threads:
        raise RuntimeNotSupported(f"runtime.streams {streams} with {threads} thread(s): each stream needs a thread "
                                  f"of its own; set runtime.threads to {streams} or more, or fewer streams")
    return threads // streams


def share_torch_threads() -> int:
    """For a runtime other than torch: the torch ops around its forward (letterbox, decode, NMS) run on one thread,
    in each stream's worker as on the caller. A larger torch team waits at its barrier by spinning (libgomp's
    policy) on the cores the runtime's pool needs next, and the pool's own spinning threads hold the cores that
    team wants: each slows the other (benchmarks/peers/runtime_own_loop.py --with-stages prints what it costs). Those ops are
    small next to the forward. Returns torch's thread count; close() gives the previous one back
    (restore_torch_threads)."""
    torch.set_num_threads(1)
    return 1


def restore_torch_threads(count: Optional[int]) -> None:
    """torch's thread count as it was before a runtime shared it out (None: it never did)."""
    if count is not None and torch.get_num_threads() != count:
        torch.set_num_threads(count)


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's ops inside run on `count` threads (the torch reference's forward in a run whose own runtime keeps
    torch to one), then on as many as before."""
    before = torch.get_num_threads()
    if count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if count != before:
            torch.set_num_threads(before)


def share_opencv_threads(threads: int, streams: int) -> int:
    """With streams, each worker's letterbox resizes with OpenCV, whose pool is process-wide and as large as the
    machine: a worker's resize then puts a pool thread beside the other streams' inference. Each stream's share
    instead: less of each stream's time falls outside the forward (benchmarks/peers/openvino_benchmark_app.py prints the whole
    pipeline against its forward alone). Returns OpenCV's thread count."""
    import cv2

    if streams > 1:
        cv2.setNumThreads(threads_per_stream(threads, streams))
    return cv2.getNumThreads()


def usable_cores() -> Optional[list[int]]:
    """The cores this process may run on, or None where the OS does not say (no sched_getaffinity)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return sorted(os.sched_getaffinity(0))


def cores_to_pin(cores: Optional[Sequence[int]], needed: int) -> list[int]:
    """The first `needed` usable cores, or a refusal that says why pinning cannot be done."""
    if cores is None:
        raise RuntimeNotSupported("runtime.pinning: this OS does not let a process choose its cores "
                                  "(no sched_setaffinity); remove runtime.pinning")
    if needed > len(cores):
        raise RuntimeNotSupported(f"runtime.pinning: {needed} compute thread(s) but this process may use "
                                  f"{len(cores)} core(s) ({', '.join(map(str, cores))}); lower runtime.threads "
                                  "or remove runtime.pinning")
    return list(cores[:needed])


def stream_cores(cores: Sequence[int], streams: int) -> list[list[int]]:
    """Disjoint, equal groups of cores, one per stream, in order."""
    size = len(cores) // streams
    return [list(cores[i * size:(i + 1) * size]) for i in range(streams)]


def ort_intra_op_affinities(cores: Sequence[int]) -> str:
    """ONNX Runtime's session.intra_op_thread_affinities for an intra-op pool on `cores`: one group per pool
    thread except the calling thread (which runs on the first core), processor ids counted from 1."""
    return ";".join(str(core + 1) for core in cores[1:])
