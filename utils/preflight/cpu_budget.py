"""How many CPUs this process may run on, and a warning when runtime.threads asks for more.

More compute threads than CPUs makes them wait for each other (68x slower per image was seen with 999
threads on 2 CPUs). Studying that stays possible; doing it by accident is said in the console, summary.json
and report.html.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable, Optional

from utils.preflight.cgroup_files import CGROUP_ROOT, read_value


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, read: Callable[[Path], Optional[str]] = None) -> Optional[float]:
    """CPUs' worth of time the cgroup grants per period (v2 cpu.max, v1 cfs quota/period); None: no quota."""
    read = read or read_value
    text = read(root / "cpu.max")
    if text:
        quota, _, period = text.partition(" ")
        if quota.isdigit() and period.strip().isdigit() and int(period) > 0:
            return int(quota) / int(period)
        return None
    quota, period = read(root / "cpu" / "cpu.cfs_quota_us"), read(root / "cpu" / "cpu.cfs_period_us")
    if quota and period and quota.lstrip("-").isdigit() and period.isdigit() and int(quota) > 0 and int(period) > 0:
        return int(quota) / int(period)
    return None



def usable_cpus(affinity: Optional[int] = None, quota: Optional[float] = None) -> tuple[int, str]:
    """(CPUs, what limits them): the affinity mask, narrowed by a cgroup quota when one is set."""
    if affinity is None:
        affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if quota is None:
        quota = cgroup_cpu_quota()
    if quota is not None and math.ceil(quota) < affinity:
        return max(1, math.ceil(quota)), f"the cgroup CPU quota grants {quota:g} CPUs' worth of time"
    return affinity, "the CPUs in this process's affinity mask"


def threads_warning(threads: Optional[int], cpus: int, limited_by: str) -> Optional[str]:
    if threads is None or threads <= cpus:
        return None
    return (f"runtime.threads {threads} is more than the {cpus} CPU(s) this process may run on ({limited_by}): "
            "the threads wait for each other and every forward is slower than it would be; set runtime.threads "
            f"to {cpus} or less (or leave it unset) unless oversubscription is what you are measuring")


def loader_workers(requested: Optional[int], threads: int, cores: int) -> tuple[int, Optional[str]]:
    """Decoding in a worker process overlaps the forward but takes a core from it: by default only where a
    core is left beside the compute threads; a user's choice that takes one comes with a warning."""
    if requested is None:
        return (1 if cores > threads else 0), None
    if requested and requested + threads > cores:
        return requested, (f"dataset.workers {requested} with {threads} compute thread(s) on {cores} core(s): "
                           "decoding takes cores from the forward while it runs, which slows it; leave "
                           "dataset.workers unset to decode between forwards instead")
    return requested, None
