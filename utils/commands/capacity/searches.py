"""The searches' state: every run of N cameras of each candidate searched, as plain data that capacity.json holds
(so that `--resume` picks a stopped search up), and what the pure search (search.py) makes of them."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Optional

from utils.commands.capacity.point import PointReading
from utils.commands.capacity.readings import CameraPoint
from utils.commands.capacity.search import MAX_COUNT, Answer, RunJudgement, answer, next_count, verdicts_of
from utils.commands.capacity.plan import DEFAULT_POINT_S, MAX_POINT_S

# The search never runs more cameras than this many times the bound from isolated costs (nor MAX_COUNT):
# a CPU serving three times what its cores could pay for is a measurement to distrust, not to chase.
BOUND_LIMIT = 3.0
UNBOUNDED_LIMIT = 64  # before any bound is known


@dataclass
class CountRun:
    """One run of N cameras."""

    candidate: str
    count: int
    run_dir: str  # relative to the capacity directory
    duration_s: float  # its window
    status: str = "pending"  # complete, failed or stopped once it ended
    reason: str = ""
    seconds: float = 0.0  # wall time of the run itself
    start_s: float = 0.0  # its process's start
    point: Optional[CameraPoint] = None  # read back from its run directory, never stored

    def document(self) -> dict:
        return {key: value for key, value in asdict(self).items() if key != "point"}

    @property
    def reading(self) -> Optional[PointReading]:
        return self.point.reading if self.point is not None else None

    def judgement(self) -> Optional[RunJudgement]:
        reading = self.reading
        return None if reading is None else RunJudgement(reading.served, reading.sure)


@dataclass
class CandidateSearch:
    candidate: str
    floor: int = 0  # the best answer when it started: it must serve floor + 1 to beat it
    runs: list[CountRun] = field(default_factory=list)
    stopped: str = ""  # why it stopped before it settled (a run that failed), empty while it goes on

    def judged(self) -> dict[int, list[RunJudgement]]:
        by_count: dict[int, list[RunJudgement]] = {}
        for run in self.runs:
            judgement = run.judgement() if run.status == "complete" else None
            if judgement is not None:
                by_count.setdefault(run.count, []).append(judgement)
        return by_count

    def verdicts(self) -> dict[int, Optional[bool]]:
        return verdicts_of(self.judged())

    def limit(self, bound: Optional[float]) -> int:
        return min(MAX_COUNT, max(self.floor + 2, math.ceil(BOUND_LIMIT * bound))) if bound else UNBOUNDED_LIMIT

    def next_count(self, bound: Optional[float]) -> Optional[int]:
        return None if self.stopped else next_count(self.verdicts(), self.floor, self.limit(bound))

    def answer(self, bound: Optional[float]) -> Answer:
        return answer(self.verdicts(), self.floor, self.limit(bound))

    def duration_s(self, count: int, point_s: float = DEFAULT_POINT_S) -> float:
        """A point's window: the request's, twice as long for every run of it that was not steady, at most
        MAX_POINT_S (or the request's, if longer)."""
        unsteady = sum(1 for run in self.runs if run.count == count and run.reading is not None
                       and not run.reading.steady)
        return min(point_s * 2 ** unsteady, max(point_s, MAX_POINT_S))

    def lowest(self) -> Optional[CountRun]:
        """Its complete run of the fewest cameras: where its isolated costs are read."""
        done = [run for run in self.runs if run.status == "complete" and run.point is not None]
        return min(done, key=lambda run: run.count) if done else None

    def document(self) -> dict:
        return {"candidate": self.candidate, "floor": self.floor, "stopped": self.stopped,
                "runs": [run.document() for run in self.runs]}
