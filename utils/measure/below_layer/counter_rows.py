"""The CPU's counters per timed pass, from the batches utils.measure.below_layer.cpu_counters read: plain data and math.

Each batch's counters cover one `pipeline` step (the reads bracket the step timer's own), or under LoadGen one
whole test (`run` step: its streams' batches overlap). Per pass and per thread they are summed; CPU time against
wall time is the thread's task clock (perf) or its user + system ticks (/proc) over the pass's summed time of
those steps; IPC is instructions per cycle. System time (the kernel's share of the CPU time, page faults
included) comes from /proc's ticks alone: perf may count user space only.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from utils.record.steps import PIPELINE_STEP, RUN_STEP, PassKind, StepRecord
from utils.record.sections import MEASURED, UNAVAILABLE, CpuCountersSection

COUNTER_COLUMNS = ("pass_index", "thread", "tid", "batches", "images", "wall_ms", "cpu_ms", "system_ms",
                   "cpu_per_wall", "cpu_source",
                   "voluntary_switches", "involuntary_switches", "context_switches", "cpu_migrations",
                   "minor_faults", "major_faults", "cycles", "instructions", "ipc", "llc_misses")
PROCESS_ROW = "all threads"
HARDWARE = ("cycles", "instructions", "llc_misses")
READ_AROUND = {PIPELINE_STEP: "read around every pipeline step of the timed passes",
               RUN_STEP: "read at the start and end of the LoadGen test (its streams' batches overlap)"}


def batches_of_passes(batches: Iterable[Any], records: Sequence[StepRecord],
                      around: str = PIPELINE_STEP) -> dict[int, list[Any]]:
    """Timed pass index -> the batches whose reads bracket one of its `around` steps."""
    steps = [r for r in records if r.step == around and r.pass_kind is PassKind.TIMED]
    passes: dict[int, list[Any]] = {}
    for batch in batches:
        for record in steps:
            if batch.start_ns <= record.start_ns and record.end_ns <= batch.end_ns:
                passes.setdefault(record.pass_index, []).append((batch, record))
                break
    return passes


def _ratio(numerator: Optional[float], denominator: Optional[float]) -> Optional[float]:
    return numerator / denominator if numerator is not None and denominator else None


@dataclass(frozen=True)
class PassSpan:
    """What a timed pass's rows share: its index, its batches whose reads bracket its steps, its images, and the
    summed wall time of those steps."""

    pass_index: int
    batches: int
    images: int
    wall_ms: float


def thread_row(span: PassSpan, name: str, tid: Any, sums: Mapping[str, float], tick_ms: float) -> dict[str, Any]:
    if "task_clock_ns" in sums:
        cpu_ms, source = sums["task_clock_ns"] / 1e6, "perf task-clock"
    else:
        cpu_ms = (sums.get("cpu_user_ticks", 0) + sums.get("cpu_system_ticks", 0)) * tick_ms
        source = f"/proc ticks ({tick_ms:g} ms each)"
    get = sums.get
    return {
        "pass_index": span.pass_index, "thread": name, "tid": tid, "batches": span.batches, "images": span.images,
        "wall_ms": span.wall_ms, "cpu_ms": cpu_ms,
        "system_ms": sums["cpu_system_ticks"] * tick_ms if "cpu_system_ticks" in sums else None,
        "cpu_per_wall": _ratio(cpu_ms, span.wall_ms), "cpu_source": source,
        "voluntary_switches": get("voluntary_switches"), "involuntary_switches": get("involuntary_switches"),
        "context_switches": get("context_switches"), "cpu_migrations": get("cpu_migrations"),
        "minor_faults": get("minor_faults", get("proc_minor_faults")),
        "major_faults": get("major_faults", get("proc_major_faults")),
        "cycles": get("cycles"), "instructions": get("instructions"),
        "ipc": _ratio(get("instructions"), get("cycles")), "llc_misses": get("llc_misses"),
    }


def _add(total: dict[str, float], values: Mapping[str, float]) -> None:
    for key, value in values.items():
        total[key] = total.get(key, 0.0) + value


def counter_rows(batches: Iterable[Any], records: Sequence[StepRecord], names: Mapping[int, str],
                 tick_ms: float, around: str = PIPELINE_STEP) -> list[dict[str, Any]]:
    """Per timed pass: one row per thread that ran, then the process's total. A pass's images are those of
    its timed pipeline steps."""
    images: dict[int, int] = {}
    for record in records:
        if record.step == PIPELINE_STEP and record.pass_kind is PassKind.TIMED:
            images[record.pass_index] = images.get(record.pass_index, 0) + record.images
    rows = []
    for pass_index, pairs in sorted(batches_of_passes(batches, records, around).items()):
        span = PassSpan(pass_index, len(pairs), images.get(pass_index, 0), sum(record.ms for _, record in pairs))
        per_thread: dict[int, dict[str, float]] = {}
        for batch, _ in pairs:
            for tid, values in batch.threads.items():
                _add(per_thread.setdefault(tid, {}), values)
        total: dict[str, float] = {}
        for tid, sums in sorted(per_thread.items()):
            _add(total, sums)
            rows.append(thread_row(span, names.get(tid, "?"), tid, sums, tick_ms))
        rows.append(thread_row(span, PROCESS_ROW, "", total, tick_ms))
    return rows


def counters_summary(rows: Sequence[Mapping[str, Any]], counting: Sequence[str], refused: Mapping[str, str],
                     exclude_kernel: bool, around: str = PIPELINE_STEP) -> CpuCountersSection:
    """summary.json `cpu_counters`: per pass the process's totals, and what could not be counted and why."""
    totals = [row for row in rows if row["thread"] == PROCESS_ROW]
    busiest = {}
    for row in rows:
        if row["thread"] != PROCESS_ROW and (row["cpu_per_wall"] or 0) >= 0.05:
            busiest.setdefault(row["pass_index"], []).append(
                {"thread": row["thread"], "tid": row["tid"], "cpu_per_wall": row["cpu_per_wall"]})
    document: CpuCountersSection = {
        "status": MEASURED if totals else UNAVAILABLE,
        "source": "perf_event_open (software and hardware counters) and /proc/self/task/<tid>/{stat,status}, "
                  + READ_AROUND[around],
        "counting": list(counting),
        "unavailable": {name: refused[name] for name in refused},
        "passes": [dict({key: row[key] for key in COUNTER_COLUMNS if key not in ("thread", "tid", "cpu_source")},
                        threads=busiest.get(row["pass_index"], [])) for row in totals],
    }
    if not totals:
        document["reason"] = f"no timed {around} step was counted"
    if exclude_kernel:
        document["note"] = ("perf_event_paranoid allows user-space counting only: perf's context switches and "
                            "migrations read 0; /proc's voluntary and involuntary switches are complete")
    hardware = [name for name in HARDWARE if name in refused]
    if hardware:
        document["hardware"] = f"unavailable: {refused[hardware[0]]}"
    return document
