"""trace.json for every viewer: the torch profiler's trace of the profiled batch with integer ids and named
tracks, and the runtime's own trace of that same batch merged in where it has one.

A runtime has one when its spec names a trace reader (ONNX Runtime does): around the profiled batch its
session runs with profiling on (as in the layers pass), and the events of the batch's inferences join the
trace as their own process, e.g. "onnxruntime <version>". torch counts `ts` from the trace's
`baseTimeNanoseconds` on the Unix clock; the runtime counts from the start it reports, which `unix_ns` puts
on the Unix clock. The merge checks what that alignment claims: every inference lies inside a `forward`
step range; if one does not, the runtime's events are left out and a warning says so. OpenVINO reports
per-layer counters after each inference, not a timeline: there is nothing to merge.
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from pipelines.contract import FORWARD_STAGE
from pipelines.runtimes.profiles import RUN_EVENT
from pipelines.runtimes.registry import trace_reader
from utils.measure.layers.chrome_trace import (complete_events, integer_ids, lies_within, merge_events, name_tracks,
                                       trace_origin_ns, unix_ns)
from utils.record.run_record import ProfileResult

MAIN_THREAD = "main thread"
# ONNX Runtime stamps whole microseconds; a run's events may round past its edges by one.
ROUNDING_US = 1.0


@dataclass(frozen=True)
class RuntimeEvents:
    """A runtime's own trace events, `ts` in microseconds from `start_ns`: the start as the runtime reported
    it, on a clock of its choosing, with the wall and monotonic clocks read near it (see `unix_ns`)."""

    process_name: str
    events: tuple[dict, ...]
    start_ns: int
    wall_ns: int
    monotonic_ns: int


def batch_events(trace_events: tuple[dict, ...], warmup_runs: int) -> tuple[dict, ...]:
    """The events of the runs after the profiling session's warm-up."""
    runs = sorted((event for event in trace_events if event.get("name") == RUN_EVENT), key=lambda e: e["ts"])
    kept = runs[warmup_runs:]
    return tuple(dict(event) for event in trace_events
                 # session set-up and the warm-up run are not the batch
                 if event.get("ph") == "X" and lies_within(event, kept, ROUNDING_US))


class RuntimeTrace:
    """Around the profiled batch: the runtime's own profiler on where it has one; afterwards `events` holds
    the batch's RuntimeEvents (None for a runtime without a trace, or when the batch did not finish)."""

    def __init__(self, runtime: Any):
        self.runtime = runtime
        self.events: Optional[RuntimeEvents] = None
        self._context = None
        self._reader = trace_reader(runtime.name)

    def __enter__(self) -> "RuntimeTrace":
        if self._reader is not None:
            self._scratch = tempfile.TemporaryDirectory(prefix="detbench-trace-")
            self._wall_ns, self._monotonic_ns = time.time_ns(), time.monotonic_ns()
            try:
                context = self.runtime.profiling(self._scratch.name)
                self._profile = context.__enter__()
            except BaseException:
                self._scratch.cleanup()
                raise
            self._context = context
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._context is None:
            return
        try:
            self._context.__exit__(*exc_info)
            if exc_info[0] is None:
                native = self._reader(self.runtime, self._profile)
                self.events = RuntimeEvents(native.process_name, batch_events(native.events, native.warmup_runs),
                                            native.start_ns, self._wall_ns, self._monotonic_ns)
        finally:
            self._scratch.cleanup()


def _merge_runtime(trace: dict, runtime: RuntimeEvents, pid: int, main_tid: int) -> tuple[dict, Optional[str]]:
    """The trace with the runtime's events merged, or as it was and why not."""
    try:
        start_ns = unix_ns(runtime.start_ns, runtime.wall_ns, runtime.monotonic_ns)
    except ValueError as error:
        return trace, str(error)
    shift_us = (start_ns - trace_origin_ns(trace)) / 1000
    forwards = complete_events(trace, FORWARD_STAGE)
    runs = [dict(event, ts=event["ts"] + shift_us) for event in runtime.events if event.get("name") == RUN_EVENT]
    if not runs or not all(lies_within(run, forwards, ROUNDING_US) for run in runs):
        return trace, (f"its {len(runs)} inference(s) do not lie inside the {len(forwards)} forward step(s) of the "
                       "torch trace, so the two clocks do not line up on this machine")
    return merge_events(trace, runtime.events, shift_us, runtime.process_name, {main_tid: MAIN_THREAD},
                        sort_index=pid + 1), None


def trace_for_viewers(trace_json: str, process_name: str, pid: int, main_tid: int,
                      runtime: Optional[RuntimeEvents] = None) -> tuple[str, list[str]]:
    """The torch trace with integer ids, this process named `process_name` and its main thread named, and the
    runtime's events merged as the next process where they line up with the forward steps. Returns the
    trace JSON and the warnings."""
    trace = integer_ids(json.loads(trace_json))
    process_names, thread_names = {pid: process_name}, {(pid, main_tid): MAIN_THREAD}
    warnings: list[str] = []
    if runtime is not None and runtime.events:
        trace, problem = _merge_runtime(trace, runtime, pid, main_tid)
        if problem is not None:
            warnings.append(f"trace.json: {runtime.process_name}'s own events were left out: {problem}")
    return json.dumps(name_tracks(trace, process_names, thread_names)), warnings


def viewer_profile(profile: ProfileResult, arch: str, runtime_settings: Mapping[str, Any],
                   runtime: Optional[RuntimeEvents] = None) -> tuple[ProfileResult, list[str]]:
    """The profiled batch of this process with its trace made for viewers: the process is named
    "detbench <arch> <backend> <precision>"."""
    name = " ".join(str(part) for part in ("detbench", arch, runtime_settings.get("backend"),
                                           runtime_settings.get("precision")) if part)
    trace_json, warnings = trace_for_viewers(profile.trace_json, name, os.getpid(), threading.main_thread().native_id,
                                             runtime)
    return dataclasses.replace(profile, trace_json=trace_json), warnings
