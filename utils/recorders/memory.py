"""Resident memory (RSS) over a run: a background sampler through memory_profiler, labelled by pipeline step.

Figures are kept in MiB (2**20 bytes), the unit memory_profiler reports, under names ending in `_mib`; every
table and summary also gives them in MB (10**6 bytes) under the same name ending in `_mb`. Sampling misses peaks shorter than the
interval, so the kernel's high-water mark (ru_maxrss) is recorded beside the samples.

rss_mib is this process plus its children, as memory_profiler's include_children sums them. A forked child (a
DataLoader worker) counts the pages it still shares with this process, so the sum overstates physical memory:
the main process alone is kept beside it (self_rss_mib).
"""
from __future__ import annotations

import bisect
import os
import resource
import threading
import time
from collections.abc import Sequence
from functools import partial
from typing import Callable

from memory_profiler import memory_usage

NO_STEP = ""
MEMORY_COLUMNS = ("t_s", "rss_mb", "self_rss_mb", "children_rss_mb", "rss_mib", "self_rss_mib", "children_rss_mib",
                  "step")
MEMORY_STEP_COLUMNS = ("step", "start_s", "end_s")
MB_PER_MIB = 2**20 / 10**6


def with_megabytes(record: dict) -> dict:
    """`record` plus, for every key holding MiB (`..._mib...`), the same figure in MB under `..._mb...`."""
    def convert(value):
        if isinstance(value, dict):
            return {key: convert(item) for key, item in value.items()}
        return value * MB_PER_MIB if isinstance(value, (int, float)) else value

    extended = dict(record)
    for key, value in record.items():
        if "_mib" in key:
            extended[key.replace("_mib", "_mb")] = convert(value)
    return extended


def _memory_profiler_rss_mib(pid: int, include_children: bool) -> tuple[float, float | None]:
    """(this process, sum of its children or None when not included) in MiB."""
    # With a pid and no timeout, memory_usage takes exactly one sample (then sleeps `interval`, here 0);
    # multiprocess=True lists the children one by one after the process itself.
    if not include_children:
        return memory_usage(pid, interval=0)[0], None
    own, *children = memory_usage(pid, interval=0, multiprocess=True)[0]
    return own, sum(children)


def peak_increase_per_step(samples: Sequence[tuple[float, float]],
                           intervals: Sequence[tuple[str, float, float]]) -> dict[str, float]:
    """Per step name, the largest (peak RSS during one occurrence - RSS at its start) over its occurrences.

    samples: (t, rss_mib) sorted by t. intervals: (step, start, end) on the same clock. The RSS at a start is the
    last sample at or before it (else the first sample inside). Occurrences with no sample inside are skipped.
    """
    times = [t for t, _ in samples]
    increases: dict[str, float] = {}
    for step, start, end in intervals:
        first_inside, after_end = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
        if first_inside == after_end:
            continue
        before_start = bisect.bisect_right(times, start) - 1
        start_rss = samples[before_start if before_start >= 0 else first_inside][1]
        peak = max(rss for _, rss in samples[first_inside:after_end])
        increases[step] = max(increases.get(step, 0.0), peak - start_rss)
    return increases


class MemorySampler:
    """Context manager sampling RSS every interval_s in a daemon thread; also a StepTimer listener, so every
    sample carries the innermost step active when it was taken.

    Times are seconds since the sampler started (time.perf_counter_ns). read_rss_mib, injectable for tests,
    returns (this process, its children or None) in MiB.
    """

    def __init__(self, interval_s: float = 0.05, include_children: bool = True,
                 read_rss_mib: Callable[[], tuple[float, float | None]] | None = None):
        self.interval_s = interval_s
        self.include_children = include_children
        self._read_rss_mib = read_rss_mib or partial(_memory_profiler_rss_mib, os.getpid(), include_children)
        self.start_ns = time.perf_counter_ns()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._samples: list[tuple[int, float, float | None, str]] = []
        self._open_steps: list[tuple[str, int]] = []
        self._intervals: list[tuple[str, int, int]] = []
        self.baseline_rss_mib: float | None = None
        self.ru_maxrss_mib: float | None = None
        self.ru_maxrss_children_mib: float | None = None

    def __enter__(self) -> MemorySampler:
        self.start_ns = time.perf_counter_ns()
        self._stop.clear()
        self._sample()
        self._thread = threading.Thread(target=self._sample_until_stopped, name="memory-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        # ru_maxrss is in kB on Linux.
        self.ru_maxrss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.ru_maxrss_children_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> float:
        own_mib, children_mib = self._read_rss_mib()
        now = time.perf_counter_ns()
        with self._lock:
            step = self._open_steps[-1][0] if self._open_steps else NO_STEP
            self._samples.append((now, own_mib, children_mib, step))
        return own_mib + (children_mib or 0.0)

    def mark_baseline(self) -> float:
        """RSS right now (the runner calls this once the model is loaded); summary() reports it."""
        self.baseline_rss_mib = self._sample()
        return self.baseline_rss_mib

    def step_started(self, name: str) -> None:
        now = time.perf_counter_ns()
        with self._lock:
            self._open_steps.append((name, now))

    def step_ended(self, name: str) -> None:
        now = time.perf_counter_ns()
        with self._lock:
            opened, start_ns = self._open_steps.pop()
            if opened != name:
                raise ValueError(f"step_ended({name!r}) while the innermost open step is {opened!r}")
            self._intervals.append((name, start_ns, now))

    def _seconds(self, ns: int) -> float:
        return (ns - self.start_ns) / 1e9

    def rows(self) -> list[dict]:
        """Rows of memory.csv: t_s, rss_mib (process + children), step ("" outside any step), and the two
        parts self_rss_mib, children_rss_mib (None when children are not included)."""
        with self._lock:
            samples = sorted(self._samples, key=lambda sample: sample[0])
        return [with_megabytes({"t_s": self._seconds(t), "rss_mib": own + (children or 0.0), "step": step,
                                "self_rss_mib": own, "children_rss_mib": children})
                for t, own, children, step in samples]

    def step_rows(self) -> list[dict]:
        """Rows of memory_steps.csv (step, start_s, end_s) on the samples' clock, for the memory plot."""
        return [{"step": step, "start_s": self._seconds(start), "end_s": self._seconds(end)}
                for step, start, end in self._intervals]

    def summary(self) -> dict:
        """summary.json `memory`."""
        rows = self.rows()
        samples = [(row["t_s"], row["rss_mib"]) for row in rows]
        own_samples = [(row["t_s"], row["self_rss_mib"]) for row in rows]
        intervals = [(step, self._seconds(start), self._seconds(end)) for step, start, end in self._intervals]
        sampled_peak = max((rss for _, rss in samples), default=None)
        peak = max((value for value in (sampled_peak, self.ru_maxrss_mib) if value is not None), default=None)
        children_peak = max((row["children_rss_mib"] for row in rows if row["children_rss_mib"] is not None),
                            default=None)
        return with_megabytes({
            "source": "memory_profiler",
            "baseline_rss_mib": self.baseline_rss_mib,
            "peak_rss_mib": peak,
            "peak_sampled_rss_mib": sampled_peak,
            "ru_maxrss_mib": self.ru_maxrss_mib,
            "ru_maxrss_children_mib": self.ru_maxrss_children_mib,
            "peak_increase_over_baseline_mib": (peak - self.baseline_rss_mib
                                               if peak is not None and self.baseline_rss_mib is not None else None),
            "peak_increase_mib_per_step": peak_increase_per_step(samples, intervals),
            "peak_self_rss_mib": max((value for value in (*(rss for _, rss in own_samples), self.ru_maxrss_mib)
                                     if value is not None), default=None),
            "peak_children_rss_mib": children_peak,
            "peak_increase_self_mib_per_step": peak_increase_per_step(own_samples, intervals),
            "samples": len(samples),
            "interval_s": self.interval_s,
            "include_children": self.include_children,
        })
