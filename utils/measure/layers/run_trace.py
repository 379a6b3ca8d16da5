"""trace.json with what lies below the layer: the timed passes' steps, py-spy's stacks and the CPU counters
on one clock. Without a profiled batch the trace starts at the step timer's origin; with one, these join the
torch profiler's trace as their own processes, moved from perf_counter onto its Unix clock."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from utils.measure.layers.chrome_trace import integer_ids, merge_events, trace_origin_ns
from utils.record.steps import RUN_STEP, PassKind, StepRecord

STEPS_PROCESS = "detbench steps (timed passes)"
SAMPLES_PROCESS = "py-spy stacks (native frames)"
COUNTERS_PROCESS = "CPU counters (per batch, all threads)"
COUNTER_TRACKS = ("task_clock_ns", "context_switches", "voluntary_switches", "involuntary_switches",
                  "cpu_migrations", "minor_faults", "major_faults", "instructions", "cycles", "llc_misses")


def step_events(records: Sequence[StepRecord]) -> list[dict[str, Any]]:
    """The timed passes' steps as `X` events, `ts` in perf_counter microseconds."""
    return [{"ph": "X", "name": r.step, "cat": "step", "tid": 1, "ts": r.start_ns / 1e3,
             "dur": (r.end_ns - r.start_ns) / 1e3,
             "args": {"pass_index": r.pass_index, "batch": r.batch, "images": r.images}}
            for r in records if r.pass_kind is PassKind.TIMED and r.step != RUN_STEP]


def counter_events(batches: Iterable[Any]) -> list[dict[str, Any]]:
    """One `C` event per counter and batch: the batch's amount summed over threads, from its start; 0 after
    its end, so the gaps between batches show as gaps."""
    out = []
    for batch in batches:
        sums: dict[str, float] = {}
        for values in batch.threads.values():
            for key, value in values.items():
                sums[key] = sums.get(key, 0.0) + value
        for key in COUNTER_TRACKS:
            if key in sums:
                out.append({"ph": "C", "name": key, "tid": 1, "ts": batch.start_ns / 1e3, "args": {key: sums[key]}})
                out.append({"ph": "C", "name": key, "tid": 1, "ts": batch.end_ns / 1e3, "args": {key: 0}})
    return out


def below_trace(base: Optional[dict], unix_minus_perf_ns: int, origin_ns: int, steps: list[dict],
                samples: list[dict], counters: list[dict], sample_threads: Mapping[Any, str]) -> dict:
    """`base` (a torch trace, already made for viewers) or a new trace, with the three groups merged."""
    if base is None:
        trace = {"traceEvents": [], "displayTimeUnit": "ms"}
        shift_us = -origin_ns / 1e3
    else:
        trace = integer_ids(base)
        shift_us = (unix_minus_perf_ns - trace_origin_ns(trace)) / 1e3
    for events, name, threads in ((steps, STEPS_PROCESS, {1: "steps"}), (samples, SAMPLES_PROCESS, sample_threads),
                                  (counters, COUNTERS_PROCESS, {1: "counters"})):
        if events:
            trace = merge_events(trace, events, shift_us, name, threads)
    return trace
