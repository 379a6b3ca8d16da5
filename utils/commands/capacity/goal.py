"""What the capacity race runs for, in the shape of tune's goals (utils/commands/tune/goals.py), so that tune's race,
standings and answer work on it unchanged: the frames per second a way of computing detects while its cameras'
files are decoded (the flat-out runs of plan.py), as a cost, lower is better: milliseconds per frame served."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from utils.commands.sweep.answer import PointFigures


@dataclass(frozen=True)
class ServedGoal:
    fps: Optional[float]  # each camera's frames per second, to say a figure in cameras; None: unknown yet
    quantile: float = 50.0
    unit: str = " ms/frame"

    def cost(self, figures: Optional[PointFigures]) -> Optional[float]:
        """A camera run's ms per frame detected; None for a run that is not one (a check on images)."""
        rate = figures.frames_per_s if figures is not None else None
        return 1000.0 / rate if rate else None

    def samples(self, figures: PointFigures) -> tuple[float, ...]:
        cost = self.cost(figures)
        return () if cost is None else (cost,)

    def shown(self, cost: float) -> str:
        cameras = f", about {1000.0 / cost / self.fps:.1f} cameras' worth" if self.fps else ""
        return f"{1000.0 / cost:.2f} frames/s detected{cameras}"

    def describe(self) -> str:
        return ("frames/s a way detects with its cameras' files decoded beside it, read as fast as it takes them "
                "(decode included, nothing dropped); higher serves more")

    def overrides(self) -> list[str]:
        return ["benchmark.scenario=cameras"]
