"""What the CPU counted while the pipeline ran: per thread of this process, per pipeline batch.

A StepTimer listener: at the start and end of every `pipeline` step (or of another step it is told to bracket)
it reads, for each thread of the process,
the kernel's perf_event counters (utils.measure.below_layer.perf_events: task clock, context switches, CPU migrations,
and cycles, instructions and LLC misses where the CPU exposes them) and the thread's
/proc/self/task/<tid>/stat and status (voluntary and involuntary context switches, minor and major faults,
user and system CPU time; the faults from here alone, as a perf counter of them taxes every fault). Each
batch's difference is kept as plain data; utils.measure.below_layer.counter_rows sums them per pass. A counter the kernel
refuses is left out and its refusal kept, in words.

The reads sit inside the timed batches, so they are kept cheap: each thread's files stay open and are read again
from offset 0 (the kernel regenerates them on every read), only the needed fields are parsed, and each counter is
one read(2): about a third of the cost of opening and parsing the files anew, which matters on a small model's
short batches (benchmarks/overhead/harness_tax.py measures the counters' tax).

A thread born inside a bracket is counted from its birth by its /proc totals (all of which fall inside the
bracket); its perf counters open when it is first seen, so they count from the next bracket on.

Under LoadGen the streams' batches overlap, so per-batch reads would not say whose time they hold, and each one
(every thread's files, twice) delayed the stream that made it (figures: benchmarks/RESULTS.md): there the reads
bracket the whole test (`RUN_STEP`) instead.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from utils.measure.below_layer.record import BatchCounters
from utils.record.steps import PIPELINE_STEP
from utils.measure.below_layer import perf_events

TASK_ROOT = Path("/proc/self/task")
PROC_COUNTERS = ("voluntary_switches", "involuntary_switches", "proc_minor_faults", "proc_major_faults",
                 "cpu_user_ticks", "cpu_system_ticks")


def _status_count(status: bytes, key: bytes) -> float:
    start = status.index(key) + len(key)
    end = status.find(b"\n", start)
    return float(status[start:end if end >= 0 else len(status)])


def parse_task(stat: bytes, status: bytes) -> dict[str, float]:
    """A thread's context switches, faults and CPU ticks from its /proc stat and status (the kernel's own
    bookkeeping)."""
    fields = stat[stat.rindex(b")") + 2:].split()
    return {"voluntary_switches": _status_count(status, b"\nvoluntary_ctxt_switches:"),
            "involuntary_switches": _status_count(status, b"\nnonvoluntary_ctxt_switches:"),
            "proc_minor_faults": float(fields[7]), "proc_major_faults": float(fields[9]),
            "cpu_user_ticks": float(fields[11]), "cpu_system_ticks": float(fields[12])}


def _read_whole(fd: int, size: int = 1 << 14) -> bytes:
    """The whole file behind `fd`, from offset 0: a fresh reading of a /proc file."""
    data = os.pread(fd, size, 0)
    while len(data) == size:  # did not fit (a machine with very many CPUs lists them all in status)
        size *= 4
        data = os.pread(fd, size, 0)
    return data


def thread_name(task: Path) -> str:
    try:
        return (task / "comm").read_text().strip()
    except OSError:
        return "?"


@dataclass
class _Thread:
    stat: int
    status: int
    counters: dict[str, int] = field(default_factory=dict)

    def read_proc(self) -> dict[str, float]:
        return parse_task(_read_whole(self.stat), _read_whole(self.status))

    def read(self) -> dict[str, float]:
        values = self.read_proc()
        for name, fd in self.counters.items():
            values[name] = perf_events.read_scaled(fd)
        return values

    def close(self) -> None:
        for fd in (self.stat, self.status, *self.counters.values()):
            os.close(fd)


class CpuCounters:
    """StepListener reading every thread's counters around each `around` step; `batches` holds the results,
    `refused` the counters the kernel would not give (name -> why), `names` each thread's name."""

    def __init__(self, task_root: Path | str = TASK_ROOT, counters: tuple[str, ...] = perf_events.COUNTERS,
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

    def _attach_new_threads(self) -> list[int]:
        """Opens the files and counters of every thread not seen before; returns their ids."""
        attached = []
        for entry in os.listdir(self.task_root):
            tid = int(entry)
            if tid in self._threads:
                continue
            task = self.task_root / entry
            try:
                thread = _Thread(os.open(task / "stat", os.O_RDONLY), os.open(task / "status", os.O_RDONLY))
            except OSError:
                continue  # the thread ended between listing and opening
            for name in self.counting:
                try:
                    fd = perf_events.open_counter(name, tid, self.exclude_kernel)
                except perf_events.PerfRefused:
                    continue
                perf_events.enable(fd)
                thread.counters[name] = fd
            self._threads[tid] = thread
            self.names[tid] = thread_name(task)
            attached.append(tid)
        return attached

    def _read(self) -> dict[int, dict[str, float]]:
        readings: dict[int, dict[str, float]] = {}
        for tid, thread in list(self._threads.items()):
            try:
                readings[tid] = thread.read()
            except (OSError, ValueError, IndexError):
                thread.close()  # ended: its last batch is not counted
                del self._threads[tid]
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
        counts = {tid: {key: end[tid][key] - value for key, value in values.items() if key in end[tid]}
                  for tid, values in start.items() if tid in end}
        # A thread born inside the bracket (a LoadGen test starts its own) did all its /proc counting inside it;
        # its perf counters open only now, so they are left out for this bracket.
        for tid in self._attach_new_threads():
            try:
                counts[tid] = self._threads[tid].read_proc()
            except (OSError, ValueError, IndexError):
                continue
        self.batches.append(BatchCounters(start_ns, end_ns, counts))

    def close(self) -> None:
        for thread in self._threads.values():
            thread.close()
        self._threads.clear()

    def __enter__(self) -> "CpuCounters":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
