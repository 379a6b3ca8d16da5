"""The CPU a script's figures were measured on, as the scripts print it beside them."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from utils.measure.below_layer.kernels import cpu_flags

CPUINFO = Path("/proc/cpuinfo")


def cpu_model() -> str:
    return next((line.split(":", 1)[1].strip() for line in CPUINFO.read_text().splitlines()
                 if line.startswith("model name")), "?")


def flags_among(wanted: Sequence[str]) -> list[str]:
    """The flags of `wanted` this CPU has, in `wanted`'s order."""
    flags = cpu_flags(CPUINFO.read_text())
    return [flag for flag in wanted if flag in flags]


def flags_starting(prefixes: Sequence[str]) -> list[str]:
    """Every flag of this CPU that starts with one of `prefixes`, sorted."""
    return sorted(flag for flag in cpu_flags(CPUINFO.read_text()) if flag.startswith(tuple(prefixes)))
