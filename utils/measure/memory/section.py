"""summary.json `memory` (utils/record/sections.py says what every section shares)."""

# Annotations evaluated (no `from __future__ import annotations`): TypedDict sees Required[...] only then.
from typing import Optional

from utils.record.sections import Section, SectionStatus


class MemorySection(Section, total=False):
    """The process tree's memory. `headline` names the figure to quote. Every key holding MiB (`*_mib*`) has an
    MB twin (`*_mb*`) beside it, added by the memory recorder's `with_megabytes`."""
    headline: str
    pss_status: SectionStatus
    pss_reason: str
    pss_scope: str
    peak_pss_mib: Optional[float]
    peak_pss_anon_mib: Optional[float]
    baseline_pss_mib: Optional[float]
    pss_samples: int
    pss_read_ms: float
    pss_mean_spacing_s: Optional[float]
    baseline_rss_mib: Optional[float]
    peak_rss_mib: Optional[float]
    peak_rss_note: str
    peak_sampled_rss_mib: Optional[float]
    ru_maxrss_mib: Optional[float]
    ru_maxrss_children_mib: Optional[float]
    peak_increase_over_baseline_mib: Optional[float]
    peak_increase_mib_per_step: dict[str, float]
    peak_self_rss_mib: Optional[float]
    peak_children_rss_mib: Optional[float]
    peak_increase_self_mib_per_step: dict[str, float]
    samples: int
    interval_s: float
    include_children: bool
