"""A detbench run as the benchmark scripts start it and read it: its command line, and the figures of its
summary.json that several scripts set beside a peer's."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[2]


def as_sets(items: Iterable[str]) -> list[str]:
    """KEY=VALUE items as benchmark.py's `--set` arguments, in their order (a later one wins)."""
    return [part for item in items for part in ("--set", item)]


def benchmark_command(config: Path | str, sets: Iterable[str], root: Path = ROOT, command: Sequence[str] = (),
                      python: str = sys.executable) -> list[str]:
    """`python <root>/benchmark.py [command] --config CONFIG --set ...`; root: the checkout whose benchmark.py runs."""
    return [python, str(root / "benchmark.py"), *command, "--config", str(config), *as_sets(sets)]


def undecoded_ms_per_image(summary: Mapping) -> float:
    """The pipeline's mean per timed image without the image decoding (load): letterbox, forward, NMS, boxes."""
    steps = summary["steps"]
    return (steps["pipeline"]["total_ms"] - steps["load"]["total_ms"]) / summary["images_timed"]
