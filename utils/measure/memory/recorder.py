"""Memory over a run: the process's RSS sampled cheaply, the process tree's PSS read less often, both labelled
by pipeline step.

Figures are kept in MiB (2**20 bytes) under names ending in `_mib`; every table and summary also gives them in
MB (10**6 bytes) under the same name ending in `_mb`.

Every interval the sampler reads the RSS of the process and of each of its descendants from /proc/<pid>/statm
(microseconds; the descendants are listed again every RELIST_S, or when the main thread forks). RSS overstates
what a process tree holds: a forked DataLoader worker counts every page it still shares with the process, so
rss_mib (process + children) counts those pages twice. The honest figure is the tree's PSS (proportional set
size: a shared page is split between the processes that map it), summed from /proc/<pid>/smaps_rollup of the
process and its descendants. That read walks the page tables (tens of milliseconds on a large process;
benchmarks/overhead/harness_tax.py measures the sampler's tax), so it is spaced to take at most PSS_BUDGET of one core, and
never less than pss_min_interval_s apart. PSS also splits file pages (torch's libraries) with unrelated processes
that map the same files, so it drifts a little with what else runs; pss_anon_mib (anonymous pages only) does not.

Sampling misses peaks shorter than the interval, so the kernel's high-water mark of the process's RSS
(ru_maxrss) is recorded beside the samples.
"""
from __future__ import annotations

import bisect
import os
import resource
import statistics
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

from utils.core.native_thread import name_this_thread
from utils.measure.memory.section import MemorySection
from utils.record.sections import MEASURED, UNAVAILABLE

NO_STEP = ""
MEMORY_COLUMNS = ("t_s", "pss_mb", "pss_anon_mb", "rss_mb", "self_rss_mb", "children_rss_mb",
                  "pss_mib", "pss_anon_mib", "rss_mib", "self_rss_mib", "children_rss_mib", "step")
MEMORY_STEP_COLUMNS = ("step", "start_s", "end_s")
MB_PER_MIB = 2**20 / 10**6
PROC_ROOT = Path("/proc")
# Share of one core the smaps_rollup reads may take: on 2 cores every stolen millisecond delays a compute thread.
PSS_BUDGET = 0.01
# Seconds between two listings of the process's descendants for the RSS samples: a child forked since shows up
# at most this late (the harness starts its loader workers before the timed passes).
RELIST_S = 1.0
SAMPLER_NAME = "memory-sampler"
_PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / 2**20


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


class PssUnavailable(Exception):
    """smaps_rollup cannot be read; the message says why."""


class ProcessTree:
    """Reads the memory of a process and (with include_children) of all its descendants from a /proc tree.

    Paths are plain strings and files are read as bytes: the RSS read runs 20 times a second, and pathlib and
    text decoding doubled its cost (figures: benchmarks/RESULTS.md)."""

    def __init__(self, pid: int | None = None, include_children: bool = True, root: Path | str = PROC_ROOT,
                 relist_s: float = RELIST_S, clock: Callable[[], float] = time.monotonic):
        self.pid = pid if pid is not None else os.getpid()
        self.include_children = include_children
        self.root = os.fspath(root)
        self.relist_s = relist_s
        self._clock = clock
        self._children: list[int] = []
        self._listed_at: float | None = None

    def _children_of(self, tasks: str, tid: str) -> list[int]:
        with open(f"{tasks}/{tid}/children", "rb") as handle:
            return [int(child) for child in handle.read().split()]

    def descendants(self) -> list[int]:
        """Children are listed per thread (/proc/<pid>/task/<tid>/children), then their children in turn."""
        found, pending = [], [self.pid]
        while pending:
            tasks = f"{self.root}/{pending.pop()}/task"
            try:
                tids = os.listdir(tasks)
            except OSError:  # exited since it was listed
                continue
            for tid in tids:
                try:
                    children = self._children_of(tasks, tid)
                except OSError:
                    continue
                found.extend(children)
                pending.extend(children)
        return found

    def _listed_descendants(self) -> list[int]:
        """descendants(), listed again only every relist_s, or at once when the main thread (which forks the
        loader workers) has a child not listed yet: listing reads a file per thread, and a runtime's thread
        pools made that most of a sample's cost, taken from the compute threads 20 times a second."""
        now = self._clock()
        stale = self._listed_at is None or now - self._listed_at >= self.relist_s
        if not stale:
            try:
                stale = not set(self._children_of(f"{self.root}/{self.pid}/task", str(self.pid))) <= set(self._children)
            except OSError:
                stale = True
        if stale:
            self._children, self._listed_at = self.descendants(), now
        return self._children

    def _rss_mib(self, pid: int) -> float:
        with open(f"{self.root}/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE_MIB

    def rss_mib(self) -> tuple[float, float | None]:
        """(this process, sum of its descendants or None when children are not included) in MiB. Descendants
        are those listed at most relist_s ago; one that has exited since makes the next sample list again."""
        own = self._rss_mib(self.pid)
        if not self.include_children:
            return own, None
        children = 0.0
        for child in self._listed_descendants():
            try:
                children += self._rss_mib(child)
            except (OSError, IndexError, ValueError):  # exited since it was listed
                self._listed_at = None
        return own, children

    def _rollup_mib(self, pid: int) -> tuple[float, float | None]:
        fields = {}
        with open(f"{self.root}/{pid}/smaps_rollup") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key in ("Pss", "Pss_Anon"):
                    fields[key] = int(value.split()[0]) / 1024  # kB
        if "Pss" not in fields:
            raise PssUnavailable(f"{self.root}/{pid}/smaps_rollup has no Pss line")
        # Pss_Anon appeared in Linux 5.14; before it only the total is known.
        return fields["Pss"], fields.get("Pss_Anon")

    def pss_mib(self) -> tuple[float, float | None]:
        """(PSS, anonymous PSS or None before Linux 5.14) of the process and its descendants in MiB; raises
        PssUnavailable."""
        try:
            pss, anon = self._rollup_mib(self.pid)
        except FileNotFoundError as error:
            raise PssUnavailable(f"no {error.filename}: smaps_rollup needs Linux 4.14 or later") from error
        except PermissionError as error:
            raise PssUnavailable(f"{error.filename} is not readable by this user") from error
        except OSError as error:
            raise PssUnavailable(f"reading {error.filename} failed: {error.strerror or error}") from error
        if not self.include_children:
            return pss, anon
        for child in self.descendants():
            try:
                child_pss, child_anon = self._rollup_mib(child)
            except (FileNotFoundError, ProcessLookupError):  # exited: it holds no memory any more
                continue
            except PermissionError as error:
                raise PssUnavailable(f"{error.filename} of child process {child} is not readable by this user; "
                                     f"the tree's PSS would leave it out") from error
            except OSError as error:
                raise PssUnavailable(f"reading {error.filename} of child process {child} failed: "
                                     f"{error.strerror or error}") from error
            pss = pss + child_pss
            anon = anon + child_anon if anon is not None and child_anon is not None else None
        return pss, anon


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


def _peak(*values: float | None) -> float | None:
    return max((value for value in values if value is not None), default=None)


class MemorySampler:
    """Context manager sampling RSS every interval_s in a daemon thread, and the tree's PSS at entry, at
    mark_baseline(), at exit and every pss_min_interval_s or more in between (see PSS_BUDGET). Also a StepTimer
    listener, so every sample carries the innermost step active when it was taken; PSS is not read at step
    boundaries, where its cost would land inside the timed steps.

    Times are seconds since the sampler started (time.perf_counter_ns). Injectable for tests: read_rss_mib
    returns (this process, its children or None) in MiB; read_pss_mib returns (PSS, anonymous PSS) in MiB or
    raises PssUnavailable.
    """

    def __init__(self, interval_s: float = 0.05, include_children: bool = True,
                 read_rss_mib: Callable[[], tuple[float, float | None]] | None = None,
                 read_pss_mib: Callable[[], tuple[float, float | None]] | None = None,
                 pss_min_interval_s: float = 0.5):
        self.interval_s = interval_s
        self.include_children = include_children
        self.pss_min_interval_s = pss_min_interval_s
        tree = ProcessTree(include_children=include_children)
        self._read_rss_mib = read_rss_mib or tree.rss_mib
        self._read_pss_mib = read_pss_mib or tree.pss_mib
        self.start_ns = time.perf_counter_ns()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # Held while the thread takes a sample, so that pause() returns with no sample in flight.
        self._gate = threading.Lock()
        self._sampling = True
        self._thread: threading.Thread | None = None
        # (t_ns, own rss, children rss or None, step, pss or None, anonymous pss or None)
        self._samples: list[tuple[int, float, float | None, str, float | None, float | None]] = []
        self._open_steps: list[tuple[str, int]] = []
        self._intervals: list[tuple[str, int, int]] = []
        self._pss_read_s: list[float] = []
        self._next_pss_ns = 0
        self._pss_due_in_ns = 0
        self.unavailable: str | None = None
        self.pss_unavailable: str | None = None
        self.baseline_rss_mib: float | None = None
        self.baseline_pss_mib: float | None = None
        self.ru_maxrss_mib: float | None = None
        self.ru_maxrss_children_mib: float | None = None

    def __enter__(self) -> MemorySampler:
        self.start_ns = time.perf_counter_ns()
        self._stop.clear()
        try:
            self._sample(with_pss=True)
        except OSError as error:  # no /proc: the run goes on without memory figures
            self.unavailable = f"cannot read the process's RSS ({error}); the sampler reads /proc, which needs Linux"
            return self
        self._thread = threading.Thread(target=self._sample_until_stopped, name=SAMPLER_NAME, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._sample(with_pss=True)
        # ru_maxrss is in kB on Linux.
        self.ru_maxrss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.ru_maxrss_children_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    def _sample_until_stopped(self) -> None:
        name_this_thread(SAMPLER_NAME)
        while not self._stop.wait(self.interval_s):
            with self._gate:
                if self._sampling:
                    self._sample(with_pss=time.perf_counter_ns() >= self._next_pss_ns)

    def pause(self) -> None:
        """No sample is taken until resume(): the harness samples the timed passes only. The wait for the next
        PSS read stops with it: a read that fell due in the pause would land in the first batch after it."""
        with self._gate:
            self._sampling = False
            self._pss_due_in_ns = max(0, self._next_pss_ns - time.perf_counter_ns())

    def resume(self) -> None:
        with self._gate:
            self._sampling = True
            self._next_pss_ns = time.perf_counter_ns() + self._pss_due_in_ns

    def _read_pss(self) -> tuple[float | None, float | None]:
        if self.pss_unavailable is not None:
            return None, None
        start = time.perf_counter()
        try:
            pss, anon = self._read_pss_mib()
        except PssUnavailable as error:
            self.pss_unavailable = str(error)
            return None, None
        cost_s = time.perf_counter() - start
        self._pss_read_s.append(cost_s)
        spacing_s = max(self.pss_min_interval_s, cost_s / PSS_BUDGET)
        self._next_pss_ns = time.perf_counter_ns() + int(spacing_s * 1e9)
        return pss, anon

    def _sample(self, with_pss: bool = False) -> tuple[float, float | None]:
        """Takes one sample; returns (RSS of process + children, tree PSS or None)."""
        own_mib, children_mib = self._read_rss_mib()
        now = time.perf_counter_ns()
        pss, anon = self._read_pss() if with_pss else (None, None)
        with self._lock:
            step = self._open_steps[-1][0] if self._open_steps else NO_STEP
            self._samples.append((now, own_mib, children_mib, step, pss, anon))
        return own_mib + (children_mib or 0.0), pss

    def mark_baseline(self) -> float | None:
        """RSS (process + children) right now; the runner calls this once the model is loaded. The tree's PSS
        is read too, and summary() reports both."""
        if self.unavailable is not None:
            return None
        self.baseline_rss_mib, self.baseline_pss_mib = self._sample(with_pss=True)
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

    def rows(self, start: int = 0) -> list[dict]:
        """Rows of memory.csv: t_s, pss_mib and pss_anon_mib (the tree, None where not read), rss_mib
        (process + children), its parts self_rss_mib and children_rss_mib (None when children are not
        included), and step ("" outside any step). From the start-th on: the run's journal appends them as the
        passes end."""
        with self._lock:
            samples = sorted(self._samples, key=lambda sample: sample[0])[start:]
        return [with_megabytes({"t_s": self._seconds(t), "pss_mib": pss, "pss_anon_mib": anon,
                                "rss_mib": own + (children or 0.0), "self_rss_mib": own,
                                "children_rss_mib": children, "step": step})
                for t, own, children, step, pss, anon in samples]

    def step_rows(self, start: int = 0) -> list[dict]:
        """Rows of memory_steps.csv (step, start_s, end_s) on the samples' clock, for the memory plot; from the
        start-th on."""
        return [{"step": step, "start_s": self._seconds(begin), "end_s": self._seconds(end)}
                for step, begin, end in self._intervals[start:]]

    def _pss_summary(self, rows: list[dict]) -> dict:
        read = [row for row in rows if row["pss_mib"] is not None]
        scope = "the process and its descendants" if self.include_children else "the process alone"
        if self.pss_unavailable is not None or not read:
            # Samples taken before a failure stay in memory.csv, but a peak over part of the run is no peak.
            return {"headline": "peak_rss_mib", "pss_status": "unavailable",
                    "pss_reason": self.pss_unavailable or "smaps_rollup was never read",
                    "peak_pss_mib": None, "peak_pss_anon_mib": None, "baseline_pss_mib": None,
                    "pss_samples": len(read)}
        return {
            "headline": "peak_pss_mib",
            "pss_status": MEASURED,
            "pss_scope": scope,
            "peak_pss_mib": max(row["pss_mib"] for row in read),
            "peak_pss_anon_mib": _peak(*(row["pss_anon_mib"] for row in read)),
            "baseline_pss_mib": self.baseline_pss_mib,
            "pss_samples": len(read),
            "pss_read_ms": statistics.median(self._pss_read_s) * 1e3,
            "pss_mean_spacing_s": ((read[-1]["t_s"] - read[0]["t_s"]) / (len(read) - 1) if len(read) > 1
                                   else None),
        }

    def summary(self) -> MemorySection:
        """summary.json `memory`. `headline` names the figure to quote: the tree's peak PSS, or where
        smaps_rollup cannot be read, the summed RSS (an upper bound) with pss_reason saying why."""
        if self.unavailable is not None:
            return {"status": UNAVAILABLE, "reason": self.unavailable}
        rows = self.rows()
        samples = [(row["t_s"], row["rss_mib"]) for row in rows]
        own_samples = [(row["t_s"], row["self_rss_mib"]) for row in rows]
        intervals = [(step, self._seconds(start), self._seconds(end)) for step, start, end in self._intervals]
        sampled_peak = max((rss for _, rss in samples), default=None)
        peak = _peak(sampled_peak, self.ru_maxrss_mib)
        return with_megabytes({
            "status": MEASURED,
            "source": "/proc/<pid>/statm every interval_s; /proc/<pid>/smaps_rollup of the tree (PSS) "
                      "every pss_mean_spacing_s",
            **self._pss_summary(rows),
            "baseline_rss_mib": self.baseline_rss_mib,
            "peak_rss_mib": peak,
            "peak_rss_note": "process + children summed: pages a forked child shares with the process count twice",
            "peak_sampled_rss_mib": sampled_peak,
            "ru_maxrss_mib": self.ru_maxrss_mib,
            "ru_maxrss_children_mib": self.ru_maxrss_children_mib,
            "peak_increase_over_baseline_mib": (peak - self.baseline_rss_mib
                                               if peak is not None and self.baseline_rss_mib is not None else None),
            "peak_increase_mib_per_step": peak_increase_per_step(samples, intervals),
            "peak_self_rss_mib": _peak(*(rss for _, rss in own_samples), self.ru_maxrss_mib),
            "peak_children_rss_mib": _peak(*(row["children_rss_mib"] for row in rows)),
            "peak_increase_self_mib_per_step": peak_increase_per_step(own_samples, intervals),
            "samples": len(samples),
            "interval_s": self.interval_s,
            "include_children": self.include_children,
        })
