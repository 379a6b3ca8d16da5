"""One profiled batch of the pipeline under torch.profiler: a Chrome trace and an operator table, as data.

Every module and transform call gets a record_function range named by its call path (the same paths as
layer_timer.csv), opened in the pre-hook and closed in the post-hook, so pipeline steps, layers and aten
ops nest in the trace. The caller marks its steps with `step_range(name)`.

With memory profiling on, the same ranges give each call path its allocated bytes and operators
(utils.measure.layers.layer_profile), and the post-hooks sum the bytes of every call's output tensors.

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

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

from utils.measure.layers.layer_profile import Allocation, Span, attribute
from utils.record.layers import LayerProfile
from utils.record.run_record import ProfileResult, Table
from utils.measure.layers.call_paths import HookedCalls

PROFILER_OPS_COLUMNS = ["name", "self_cpu_ms", "total_cpu_ms", "calls", "input_shapes"]
NATIVE_NOISE = ("USDT", "gpuGetDeviceCount")
MEMORY_EVENT = "[memory]"
HOST_MEMORY = (DeviceType.CPU, DeviceType.MKLDNN, DeviceType.IDEEP)
# The profiler's own bookkeeping, left out of its tables by torch too.
BOOKKEEPING = ("[OutOfMemory]", "aten::is_leaf", "aten::output_nr", "aten::_version")


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


def output_nbytes(value: Any, seen: set[int] | None = None) -> int:
    """Bytes of the tensors and arrays in a call's output (numel x element size, so a view counts at its own
    size), found through lists, tuples, dicts and plain objects' attributes; each object counted once."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return int(value.nbytes)
    if isinstance(value, (list, tuple)):
        return sum(output_nbytes(item, seen) for item in value)
    if isinstance(value, dict):
        return sum(output_nbytes(item, seen) for item in value.values())
    if hasattr(value, "__dict__") and not isinstance(value, (nn.Module, type)):
        # e.g. an ImageList: a plain object that carries the output tensors as attributes.
        return sum(output_nbytes(item, seen) for item in vars(value).values())
    return 0


class _CallRanges(HookedCalls):
    """Opens a record_function range per module/transform call, named by its call path, and notes the bytes of
    each call's output."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.output_bytes: dict[str, list[int]] = {}

    def _before_call(self, target: Any, args: Any) -> None:
        node = self._node_for(target)
        call_range = record_function(node.path)
        self._stack.append([node, call_range])
        call_range.__enter__()

    def _after_call(self, target: Any, args: Any, output: Any) -> None:
        frame = self._pop_frame(target)
        if frame is not None:
            frame[1].__exit__(None, None, None)
            self.output_bytes.setdefault(frame[0].path, []).append(output_nbytes(output))

    def paths(self) -> set[str]:
        return {node.path for node in self._nodes.values()}


def layer_profile(events: Iterable[Any], paths: set[str], output_bytes: dict[str, list[int]]) -> LayerProfile:
    """Spans and allocations from the profiler's raw events (torch's _KinetoEvent: integer nanoseconds on
    one clock), attributed per call path. Other annotations (the steps' ranges) are left out, so an
    operator belongs to the innermost call path around it."""
    spans, allocations = [], []
    for event in events:
        name = event.name()
        if name == MEMORY_EVENT:
            if event.device_type() in HOST_MEMORY:
                allocations.append(Allocation(event.start_ns(), event.nbytes()))
            continue
        if (event.device_type() != DeviceType.CPU or name in BOOKKEEPING or name.startswith("profiler::")
                or (event.is_user_annotation() and name not in paths)):
            continue
        is_range = name in paths
        spans.append(Span(name, event.start_thread_id(), event.start_ns(), event.end_ns(), is_range,
                          "" if is_range else str(event.shapes())))
    return attribute(spans, allocations, output_bytes)


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
                     post_transforms: Iterable[Any] = (), record_shapes: bool = True,
                     profile_memory: bool = True) -> ProfileResult:
    """Run `run_once` (one batch through the whole pipeline) under torch.profiler with a range per call.

    Returns the Chrome trace, the operator table (grouped by input shape) and, with a model and
    profile_memory, memory and operators per call path as data; `wall_ms` is the wall time of `run_once` under the profiler, which adds
    overhead (more with record_shapes and profile_memory).
    """
    profiler = profile(activities=[ProfilerActivity.CPU], record_shapes=record_shapes,
                       profile_memory=profile_memory)
    ranges = _CallRanges(model, pre_transforms, post_transforms) if model is not None else None
    with native_output_filtered():
        profiler.__enter__()
    try:
        with ranges if ranges is not None else nullcontext():
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
    layers = None
    if ranges is not None and profile_memory:
        layers = layer_profile(profiler.profiler.kineto_results.events(), ranges.paths(), ranges.output_bytes)
    return ProfileResult(trace_json, Table(ops.to_dict("records"), tuple(PROFILER_OPS_COLUMNS)), wall_ms,
                         layers)
