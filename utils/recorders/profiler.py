"""One profiled batch of the pipeline under torch.profiler: a Chrome trace and an operator table, as data.

Every module and transform call gets a record_function range named by its call path (the same paths as
layer_timer.csv), opened in the pre-hook and closed in the post-hook, so pipeline steps, layers and aten
ops nest in the trace. The caller marks its steps with `step_range(name)`.

torch.profiler prints harmless USDT / gpuGetDeviceCount lines with the CUDA build of torch; set
KINETO_LOG_LEVEL=5 before importing torch to hide the ERROR line.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pandas as pd
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from utils.record.run_record import ProfileResult, Table
from utils.recorders.call_paths import HookedCalls

PROFILER_OPS_COLUMNS = ["name", "self_cpu_ms", "total_cpu_ms", "calls", "input_shapes"]
NATIVE_NOISE = ("USDT", "gpuGetDeviceCount")


@contextmanager
def step_range(name: str) -> Iterator[None]:
    """A named range around one pipeline step; shows in the trace with the layers nested inside it."""
    with record_function(name):
        yield


class StepRanges:
    """A StepTimer listener that mirrors every timed step as a record_function range."""

    def __init__(self) -> None:
        self._open: list[Any] = []

    def step_started(self, name: str) -> None:
        step = record_function(name)
        step.__enter__()
        self._open.append(step)

    def step_ended(self, name: str) -> None:
        self._open.pop().__exit__(None, None, None)


class _CallRanges(HookedCalls):
    """Opens a record_function range per module/transform call, named by its call path."""

    def _before_call(self, target: Any, args: Any) -> None:
        node = self._node_for(target)
        call_range = record_function(node.path)
        self._stack.append([node, call_range])
        call_range.__enter__()

    def _after_call(self, target: Any, args: Any, output: Any) -> None:
        frame = self._pop_frame(target)
        if frame is not None:
            frame[1].__exit__(None, None, None)


def profiler_ops_frame(key_averages: Iterable[Any]) -> pd.DataFrame:
    """Rows from torch.profiler key averages (times there are in microseconds), by self time, largest first."""
    rows = [
        {
            "name": event.key,
            "self_cpu_ms": event.self_cpu_time_total / 1000,
            "total_cpu_ms": event.cpu_time_total / 1000,
            "calls": event.count,
            "input_shapes": str(event.input_shapes),
        }
        for event in key_averages
    ]
    frame = pd.DataFrame(rows, columns=PROFILER_OPS_COLUMNS)
    return frame.sort_values("self_cpu_ms", ascending=False, kind="stable").reset_index(drop=True)


@contextmanager
def native_output_filtered(noise: tuple[str, ...] = NATIVE_NOISE) -> Iterator[None]:
    """Catches what native code prints on stdout and stderr (torch's CUDA build announces profiler start and
    stop as USDT lines, which would break the progress bar) and passes on every other line."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in (1, 2)}
    with tempfile.TemporaryFile() as caught:
        try:
            for fd in saved:
                os.dup2(caught.fileno(), fd)
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in saved.items():
                os.dup2(original, fd)
                os.close(original)
            caught.seek(0)
            kept = [line for line in caught.read().decode(errors="replace").splitlines()
                    if line.strip() and not any(marker in line for marker in noise)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


def profile_pipeline(run_once: Callable[[], None], model: nn.Module | None, pre_transforms: Iterable[Any] = (),
                     post_transforms: Iterable[Any] = (), record_shapes: bool = True) -> ProfileResult:
    """Run `run_once` (one batch through the whole pipeline) under torch.profiler with a range per call.

    Returns the Chrome trace and the operator table (grouped by input shape) as data; `wall_ms` is the wall
    time of `run_once` under the profiler, which adds overhead (more with record_shapes).
    """
    profiler = profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes)
    with native_output_filtered():
        profiler.__enter__()
    try:
        with _CallRanges(model, pre_transforms, post_transforms) if model is not None else nullcontext():
            start_ns = time.perf_counter_ns()
            run_once()
            wall_ms = (time.perf_counter_ns() - start_ns) / 1e6
    finally:
        with native_output_filtered():
            profiler.__exit__(None, None, None)
    with tempfile.TemporaryDirectory() as scratch:
        exported = Path(scratch) / "trace.json"
        profiler.export_chrome_trace(str(exported))
        trace_json = exported.read_text()
    ops = profiler_ops_frame(profiler.key_averages(group_by_input_shape=record_shapes))
    return ProfileResult(trace_json, Table(ops.to_dict("records"), tuple(PROFILER_OPS_COLUMNS)), wall_ms)
