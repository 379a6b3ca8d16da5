"""What the CPU counted while the pipeline ran: per thread of this process, per pipeline batch.

A StepTimer listener: at the start and end of every `pipeline` step (or of another step it is told to bracket)
it reads, for each thread of the process,
the kernel's perf_event counters (utils.recorders.perf_events: task clock, context switches, CPU migrations,
page faults, and cycles, instructions and LLC misses where the CPU exposes them) and the thread's
/proc/self/task/<tid>/stat and status (voluntary and involuntary context switches, minor and major faults,
user and system CPU time). Each batch's difference is kept as plain data; utils.record.cpu_counters sums
them per pass. A counter the kernel refuses is left out and its refusal kept, in words.

Under LoadGen the streams' batches overlap, so per-batch reads would not say whose time they hold, and each one
(every thread's files, twice) cost the stream that made it about 3 ms a batch: there the reads bracket the
whole test (`RUN_STEP`) instead.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from utils.record.below_layer import BatchCounters
from utils.record.steps import PIPELINE_STEP
from utils.recorders import perf_events

TASK_ROOT = Path("/proc/self/task")
PROC_COUNTERS = ("voluntary_switches", "involuntary_switches", "proc_minor_faults", "proc_major_faults",
                 "cpu_user_ticks", "cpu_system_ticks")


def read_task(task: Path) -> dict[str, float]:
    """A thread's context switches, faults and CPU ticks from /proc (the kernel's own bookkeeping)."""
    stat = (task / "stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    status = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines() if ":" in line)
    return {"voluntary_switches": float(status["voluntary_ctxt_switches"]),
            "involuntary_switches": float(status["nonvoluntary_ctxt_switches"]),
            "proc_minor_faults": float(fields[7]), "proc_major_faults": float(fields[9]),
            "cpu_user_ticks": float(fields[11]), "cpu_system_ticks": float(fields[12])}


def thread_name(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return "?"


@dataclass
class _Thread:
    fds: dict[str, int] = field(default_factory=dict)


class CpuCounters:
    """StepListener reading every thread's counters around each `around` step; `batches` holds the results,
    `refused` the counters the kernel would not give (name -> why), `names` each thread's name."""

    def __init__(self, task_root: Path | str = TASK_ROOT, counters: tuple[str, ...] = tuple(perf_events.COUNTERS),
                 around: str = PIPELINE_STEP):
        self.task_root = Path(task_root)
        self.around = around
        self.wanted = counters
        self.batches: list[BatchCounters] = []
        self.refused: dict[str, str] = {}
        self.names: dict[int, str] = {}
        self.exclude_kernel = False
        self._threads: dict[int, _Thread] = {}
        self._start: Optional[tuple[int, dict[int, dict[str, float]]]] = None
        self._probe()

    def _probe(self) -> None:
        """Which counters this process may open, tried once on the calling thread."""
        for name in self.wanted:
            reason = perf_events.probe(name)
            if reason is not None:
                self.refused[name] = reason
        if self.refused.get("task_clock_ns", "").endswith("[EACCES]"):
            # perf_event_paranoid 2 allows counting user space only: switches and migrations then read 0.
            self.exclude_kernel, self.refused = True, {}
            for name in self.wanted:
                try:
                    os.close(perf_events.open_counter(name, 0, exclude_kernel=True))
                except perf_events.PerfRefused as refused:
                    self.refused[name] = str(refused.strerror)

    @property
    def counting(self) -> tuple[str, ...]:
        return tuple(name for name in self.wanted if name not in self.refused)

    def _attach_new_threads(self) -> None:
        for entry in os.listdir(self.task_root):
            tid = int(entry)
            if tid in self._threads:
                continue
            thread = _Thread()
            for name in self.counting:
                try:
                    fd = perf_events.open_counter(name, tid, self.exclude_kernel)
                except perf_events.PerfRefused:
                    continue  # the thread ended between listing and opening
                perf_events.enable(fd)
                thread.fds[name] = fd
            self._threads[tid] = thread
            self.names[tid] = thread_name(self.task_root / entry)

    def _read(self) -> dict[int, dict[str, float]]:
        readings: dict[int, dict[str, float]] = {}
        for tid, thread in self._threads.items():
            try:
                values = read_task(self.task_root / str(tid))
            except (OSError, KeyError, IndexError, ValueError):
                continue  # ended: its last batch is not counted
            for name, fd in thread.fds.items():
                values[name] = perf_events.read_counter(fd).scaled()
            readings[tid] = values
        return readings

    def step_started(self, name: str) -> None:
        if name != self.around:
            return
        self._attach_new_threads()
        self._start = (time.perf_counter_ns(), self._read())

    def step_ended(self, name: str) -> None:
        if name != self.around or self._start is None:
            return
        end = self._read()
        end_ns = time.perf_counter_ns()
        start_ns, start = self._start
        self._start = None
        self.batches.append(BatchCounters(start_ns, end_ns, {
            tid: {key: end[tid][key] - value for key, value in values.items() if key in end[tid]}
            for tid, values in start.items() if tid in end}))

    def close(self) -> None:
        for thread in self._threads.values():
            for fd in thread.fds.values():
                os.close(fd)
        self._threads.clear()

    def __enter__(self) -> "CpuCounters":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
