"""summary.json `contention` (utils/record/sections.py says what every section shares)."""

# Annotations evaluated (no `from __future__ import annotations`): TypedDict sees Required[...] only then.
from typing import Optional

from utils.record.sections import Section


class ContentionSection(Section, total=False):
    """What else ran on the CPUs the run used, from /proc/stat against the process tree's own time."""
    windows: int
    wall_s: float
    cpus_counted: list[int]
    machine_busy_cpu_s: float
    own_cpu_s: float
    own_includes: str
    own_cpu_share: float
    other_processes_cpu_s: float
    other_processes_cpu_share: float
    steal_cpu_s: Optional[float]
    steal_share: Optional[float]
    clock_tick_s: float
    load_average_start: list[float]
    load_average_end: list[float]
    cpu_mhz: Optional[dict[str, float]]
    cpu_mhz_source: str
    free_cores: float
    threads_supported: int
