"""Noisy neighbours: how much of our cores other processes took while the timed passes ran.

Over each measured window the machine's busy time (user + nice + system + irq + softirq, from the /proc/stat lines
of the CPUs this process may run on) is compared with this run's own CPU time over the same window. The run's own
time is the process's (utime + stime), that of children it has reaped (cutime + cstime), and that of its live
descendants: DataLoader workers are this run's load, not a neighbour's. What remains is other processes' CPU
time; its share is other busy core-seconds / (cores available to us x wall seconds). Time the hypervisor gave to
other guests is reported apart as steal.

Both counters tick in clock ticks (10 ms on most kernels), per CPU and per reading: on an idle machine busy - own
can come out a tick or two below zero, and is then reported as 0. Windows shorter than a second are too coarse
to say much. The load average counts this run's own threads too; it shows the trend, not the neighbours.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from utils.measure.memory.recorder import ProcessTree
from utils.measure.contention.section import ContentionSection
from utils.record.sections import MEASURED, UNAVAILABLE, measured

PROC_ROOT = Path("/proc")
SYS_ROOT = Path("/sys")


@dataclass(frozen=True)
class CpuTicks:
    """Clock ticks summed over the counted CPUs since boot."""

    busy: int
    steal: int | None  # None when the kernel's /proc/stat has no steal column


def read_cpu_ticks(proc_root: Path, cpus: Iterable[int]) -> CpuTicks:
    wanted = {f"cpu{cpu}" for cpu in cpus}
    busy, steal = 0, 0
    has_steal = True
    for line in (proc_root / "stat").read_text().splitlines():
        name, *fields = line.split()
        if name not in wanted:
            continue
        user, nice, system, _idle, _iowait, irq, softirq, *rest = (int(value) for value in fields)
        busy += user + nice + system + irq + softirq  # guest time is already inside user and nice
        has_steal = has_steal and bool(rest)
        steal += rest[0] if rest else 0
    return CpuTicks(busy, steal if has_steal else None)


def listed_cpus(proc_root: Path) -> list[int]:
    """The CPUs /proc/stat has a line for (the online ones)."""
    return [int(line.split()[0][3:]) for line in (proc_root / "stat").read_text().splitlines()
            if line.startswith("cpu") and line[3].isdigit()]


def process_ticks(proc_root: Path, pid: int) -> int:
    """utime + stime + cutime + cstime of one process, in clock ticks."""
    text = (proc_root / str(pid) / "stat").read_text()
    # The command name may hold spaces and parentheses: the fields start after its last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return sum(int(value) for value in fields[11:15])


def own_ticks(proc_root: Path, pid: int) -> int:
    """The process, the children it reaped and its live descendants (whose own reaped children are in their
    cutime): a child reaped during a window moves from the live sum to cutime without being lost."""
    total = process_ticks(proc_root, pid)
    for child in ProcessTree(pid, root=proc_root).descendants():
        try:
            total += process_ticks(proc_root, child)
        except (OSError, ValueError):  # reaped between listing and reading: its time is in our cutime now
            continue
    return total


def read_load_average(proc_root: Path) -> tuple[float, float, float] | None:
    try:
        one, five, fifteen = (float(value) for value in (proc_root / "loadavg").read_text().split()[:3])
    except (OSError, ValueError):
        return None
    return one, five, fifteen


def read_cpu_mhz(proc_root: Path, sys_root: Path, cpus: Iterable[int]) -> tuple[list[float], str]:
    """Current frequencies of the counted CPUs and where they came from; ([], why) when nothing says."""
    cpus = list(cpus)
    scaling = []
    for cpu in cpus:
        try:
            scaling.append(int((sys_root / f"devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
                               .read_text()) / 1000)  # kHz
        except (OSError, ValueError):
            break
    else:
        if scaling:
            return scaling, "scaling_cur_freq (sysfs cpufreq)"
    try:
        cpuinfo = (proc_root / "cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    by_cpu, processor = {}, None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "processor":
            processor = int(value)
        elif key.strip() == "cpu MHz" and processor is not None:
            by_cpu[processor] = float(value)
    mhz = [by_cpu[cpu] for cpu in cpus if cpu in by_cpu]
    if mhz:
        return mhz, "/proc/cpuinfo 'cpu MHz' (in a virtual machine often the nominal frequency, not the current one)"
    return [], "no cpufreq in sysfs and no 'cpu MHz' in /proc/cpuinfo"


@dataclass(frozen=True)
class _Reading:
    wall_s: float
    cpu: CpuTicks
    own: int


class ContentionRecorder:
    """Context manager measuring other processes' share of our cores over one window; enter it once per timed
    pass and summary() covers all the windows together. The proc and sys roots, the pid, the CPUs and the
    clock are injectable for tests.
    """

    def __init__(self, proc_root: Path | str = PROC_ROOT, sys_root: Path | str = SYS_ROOT, pid: int | None = None,
                 cpus: Iterable[int] | None = None, clock: Callable[[], float] = time.perf_counter):
        self.proc_root, self.sys_root = Path(proc_root), Path(sys_root)
        self.pid = pid if pid is not None else os.getpid()
        self.clock = clock
        self.unavailable: str | None = None
        self.cpus: list[int] = []
        self._start: _Reading | None = None
        self.wall_s, self.busy_ticks, self.own_ticks, self.steal_ticks = 0.0, 0, 0, 0
        self.has_steal = True
        self.windows = 0
        self.load_start: tuple[float, float, float] | None = None
        self.load_end: tuple[float, float, float] | None = None
        self.mhz: list[float] = []
        self.mhz_source = ""
        try:
            present = listed_cpus(self.proc_root)
        except (OSError, IndexError, ValueError) as error:
            self.unavailable = f"cannot read {self.proc_root / 'stat'} ({error}): per-CPU busy time needs Linux"
            return
        allowed = set(cpus) if cpus is not None else os.sched_getaffinity(0)
        # Other processes on CPUs we may not use do not slow us: only our CPUs count.
        self.cpus = sorted(allowed & set(present)) or present

    def _read(self) -> _Reading:
        return _Reading(self.clock(), read_cpu_ticks(self.proc_root, self.cpus), own_ticks(self.proc_root, self.pid))

    def _read_frequencies(self) -> None:
        mhz, self.mhz_source = read_cpu_mhz(self.proc_root, self.sys_root, self.cpus)
        self.mhz.extend(mhz)

    def __enter__(self) -> ContentionRecorder:
        if self.unavailable is None:
            if self.load_start is None:
                self.load_start = read_load_average(self.proc_root)
            self._read_frequencies()
            self._start = self._reading_or_give_up()
        return self

    def __exit__(self, *exc_info) -> None:
        if self.unavailable is not None or self._start is None:
            return
        end = self._reading_or_give_up()
        if end is None:
            return
        start, self._start = self._start, None
        self.windows += 1
        self.wall_s += end.wall_s - start.wall_s
        self.busy_ticks += end.cpu.busy - start.cpu.busy
        self.own_ticks += end.own - start.own
        if start.cpu.steal is None or end.cpu.steal is None:
            self.has_steal = False
        else:
            self.steal_ticks += end.cpu.steal - start.cpu.steal
        self.load_end = read_load_average(self.proc_root)
        self._read_frequencies()

    def _reading_or_give_up(self) -> _Reading | None:
        """A counter that stops reading mid-run ends the contention measurement, never the run."""
        try:
            return self._read()
        except (OSError, IndexError, ValueError) as error:
            self.unavailable = f"reading the CPU counters under {self.proc_root} failed ({error})"
            return None

    def summary(self) -> ContentionSection:
        """summary.json `contention`: measured figures, or the reason there are none."""
        if self.unavailable is not None:
            return {"status": UNAVAILABLE, "reason": self.unavailable}
        if self.windows == 0 or self.wall_s <= 0:
            return {"status": UNAVAILABLE, "reason": "no window was measured"}
        tick_s = 1 / os.sysconf("SC_CLK_TCK")
        capacity_s = len(self.cpus) * self.wall_s
        busy_s, own_s = self.busy_ticks * tick_s, self.own_ticks * tick_s
        other_s = max(0.0, busy_s - own_s)
        steal_s = self.steal_ticks * tick_s if self.has_steal else None
        return {
            "status": MEASURED,
            "source": "/proc/stat per CPU against /proc/<pid>/stat of this process and its descendants",
            "windows": self.windows,
            "wall_s": self.wall_s,
            "cpus_counted": self.cpus,
            "machine_busy_cpu_s": busy_s,
            "own_cpu_s": own_s,
            "own_includes": "this process, its reaped children and its live descendants (DataLoader workers)",
            "own_cpu_share": own_s / capacity_s,
            "other_processes_cpu_s": other_s,
            "other_processes_cpu_share": other_s / capacity_s,
            "steal_cpu_s": steal_s,
            "steal_share": steal_s / capacity_s if steal_s is not None else None,
            "clock_tick_s": tick_s,
            "load_average_start": self.load_start,
            "load_average_end": self.load_end,
            "cpu_mhz": ({"min": min(self.mhz), "max": max(self.mhz), "mean": statistics.fmean(self.mhz)}
                        if self.mhz else None),
            "cpu_mhz_source": self.mhz_source,
        }


# A core counts as free when neighbours left at least this much of it: a thread on a core they keep busy waits
# for it at every barrier of its team, so the team can run several times slower than one thread would
# (figures measured so far: benchmarks/RESULTS.md).
FREE_CORE = 0.9


def free_cores(cores: int, other_share: float, steal_share: float | None) -> float:
    """The cores' worth of CPU time other processes and the hypervisor left this run."""
    return max(0.0, cores * (1.0 - other_share - (steal_share or 0.0)))


def threads_supported(cores: int, other_share: float, steal_share: float | None) -> int:
    """Compute threads the free cores support: one per free core (a core free for FREE_CORE of the time or
    more), and never fewer than one."""
    free = free_cores(cores, other_share, steal_share)
    return max(1, int(free // FREE_CORE) if free < cores else cores)


def with_thread_advice(summary: dict) -> dict:
    """summary.json `contention` with the free cores and the thread count they support."""
    if not measured(summary):
        return summary
    cores, other, steal = len(summary["cpus_counted"]), summary["other_processes_cpu_share"], summary["steal_share"]
    return dict(summary, free_cores=free_cores(cores, other, steal),
                threads_supported=threads_supported(cores, other, steal))


def contention_verdict(summary: dict, threshold: float = 0.10, threads: int | None = None) -> str | None:
    """A warning when other processes (and the hypervisor's steal) took more than `threshold` of our cores
    during the measured windows, with the thread count the free cores support; None on a quiet machine or when
    nothing was measured. `threads`: the run's compute threads, to say whether fewer would do better."""
    if not measured(summary):
        return None
    other, steal = summary["other_processes_cpu_share"], summary["steal_share"] or 0.0
    if other + steal <= threshold:
        return None
    start, end = summary["load_average_start"], summary["load_average_end"]
    load = f"load average {start[0]:.2f} -> {end[0]:.2f}" if start and end else "load average unknown"
    steal_note = f"; the hypervisor gave {steal:.0%} of them to other guests (steal)" if steal >= 0.005 else ""
    cores = len(summary["cpus_counted"])
    free, supported = free_cores(cores, other, steal), threads_supported(cores, other, steal)
    advice = (f"; the free cores (about {free:.1f} of {cores}) support {supported} compute thread(s)"
              + (f": this run used {threads}, and threads beyond the free cores wait for busy ones, so "
                 f"--set runtime.threads={supported} is likely faster while the load lasts"
                 if threads is not None and threads > supported else ""))
    return (f"contended: other processes used {other:.0%} of the cores during the timed passes ({load})"
            f"{steal_note}; timings are slower than on a quiet machine{advice}")
