"""What the user races for, and how each goal maps onto the runs: latency (single_stream, a percentile of the
per-image time over the timed batches), throughput (LoadGen offline samples/s) or a server at a target latency
(LoadGen server, its peak rate that meets the bound). Every figure becomes a cost, lower is faster, so the race
treats them alike.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from utils.commands.sweep.answer import PointFigures
from utils.commands.tune.space import SCENARIO_KEY

GOALS = ("latency", "throughput", "server")
PERCENTILES = ("p50", "p90")
# LoadGen's own minimums are sized for a whole benchmark; a racing round needs a figure, not a certificate.
ROUND_DURATION_S = 3.0


@dataclass(frozen=True)
class Goal:
    name: str
    percentile: str = "p50"
    target_ms: Optional[float] = None

    @property
    def runs_streams(self) -> bool:
        return self.name != "latency"

    @property
    def shares_processes(self) -> bool:
        """Whether runs may share a process: not under LoadGen, whose test state is the process's."""
        return self.name == "latency"

    @property
    def timed_by_passes(self) -> bool:
        """Whether its runs time detbench's own passes (single_stream), whose length a first look shortens; under
        LoadGen the test times its own queries for benchmark.loadgen.min_duration_s."""
        return self.name == "latency"

    @property
    def quantile(self) -> float:
        return float(self.percentile[1:]) if self.name == "latency" else 50.0

    @property
    def unit(self) -> str:
        return " ms/image" if self.name == "latency" else " ms/sample"

    def overrides(self) -> list[str]:
        """The settings every run of the race takes for this goal (before the user's --set, which win)."""
        if self.name == "latency":
            return [f"{SCENARIO_KEY}=single_stream"]
        sets = [f"{SCENARIO_KEY}={'offline' if self.name == 'throughput' else 'server'}",
                f"benchmark.loadgen.min_duration_s={ROUND_DURATION_S}", "benchmark.loadgen.min_query_count=1"]
        if self.name == "server":
            sets += [f"benchmark.loadgen.target_latency_ms={self.target_ms}", "benchmark.loadgen.find_peak=true"]
        return sets

    def describe(self) -> str:
        if self.name == "latency":
            return f"latency: single stream, {self.percentile} per image over the timed batches, lower is faster"
        if self.name == "throughput":
            return "throughput: LoadGen offline samples/s, higher is faster"
        return (f"server: LoadGen's highest rate whose queries meet {self.target_ms:g} ms at its percentile, higher "
                "is faster")

    def cost(self, figures: PointFigures) -> Optional[float]:
        """One run's figure as a cost (ms per image or per sample); None when it has none (a server run that
        met no rate at the bound)."""
        if self.name == "latency":
            return float(np.percentile(figures.samples, self.quantile))
        if not figures.samples_per_s or (self.name == "server" and not figures.scenario_valid):
            return None
        return 1000.0 / figures.samples_per_s

    def samples(self, figures: PointFigures) -> tuple[float, ...]:
        """What the interval is drawn from: the per-batch times under latency, the run's one figure else."""
        if self.name == "latency":
            return tuple(figures.samples)
        cost = self.cost(figures)
        return () if cost is None else (cost,)

    def shown(self, cost: float) -> str:
        if self.name == "latency":
            return f"{cost:.2f} ms/image ({self.percentile})"
        return f"{1000.0 / cost:.2f} samples/s"
