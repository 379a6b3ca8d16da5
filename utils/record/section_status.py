"""The status a recorder gives its section of the run record (energy, memory, contention, CPU counters, native
time, kernels), spelled once: writers and readers ask `measured(section)` instead of comparing strings."""
from __future__ import annotations

from typing import Any, Mapping, Optional

MEASURED = "measured"
UNAVAILABLE = "unavailable"


def measured(section: Optional[Mapping[str, Any]]) -> bool:
    """Whether the section holds measurements (and not the reason there are none)."""
    return bool(section) and section.get("status") == MEASURED
