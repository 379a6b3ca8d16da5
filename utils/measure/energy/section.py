"""summary.json `energy` (utils/record/sections.py says what every section shares)."""

# Annotations evaluated (no `from __future__ import annotations`): TypedDict sees Required[...] only then.
from typing import Any, Optional

from utils.record.sections import Section


class EnergySection(Section, total=False):
    """RAPL through pyJoules: joules per domain over the run and per step, and with an idle reading, net of it."""
    domains: list[str]
    duration_s: float
    joules: dict[str, float]
    joules_per_image: Optional[dict[str, float]]
    average_watts: dict[str, float]
    steps: dict[str, dict[str, Any]]  # per step: count, duration_s, joules (and net_joules)
    steps_below_resolution: list[str]  # steps whose windows are too short for RAPL's update rate
    idle_seconds: float
    idle_watts: dict[str, float]
    net_joules: dict[str, float]
    net_joules_per_image: Optional[dict[str, float]]
