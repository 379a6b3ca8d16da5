"""The search over N, the number of cameras a way of computing serves: pure functions over what each point said.

Doubling from a floor (floor + 1, floor + 2, floor + 4, ...) until a point is not served, then bisection between the
largest N served and the smallest not served, until they are one apart. A point is decided by its own runs
(`point_verdict`): one run sure of its side decides it; a run too close to the bounds to tell (an interval that
straddles them, or a window that was not steady) has the point run again, up to MAX_RUNS; then the majority of the
runs' estimates decides, a tie counting as not served (a deployment sized on a coin toss is not served).

A noisy machine can make decided points disagree with N's order (an N served above one not served). The answer is
then the largest N served below the smallest N not served, and the points that disagree are named with it.

The floor is where a later candidate starts: to serve more than the best answer so far, it must serve floor + 1
first; a floor of 0 searches from one camera.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

MAX_RUNS = 3  # runs of one point before the majority of their estimates decides it
MAX_COUNT = 256  # doubling stops here: an answer at it says "at least"


@dataclass(frozen=True)
class RunJudgement:
    """What one run said of its N: `served` is the side its figures fall on (p99 within the budget and drops within
    the bound); `sure` that their intervals lie wholly on that side and its window was steady."""

    served: bool
    sure: bool


def point_verdict(runs: Sequence[RunJudgement], max_runs: int = MAX_RUNS) -> Optional[bool]:
    """True served, False not, None: run the point again. Sure runs that agree decide; sure runs that disagree, or
    none sure, leave it to the majority of every run's estimate once `max_runs` have run."""
    sure = {run.served for run in runs if run.sure}
    if len(sure) == 1:
        return sure.pop()
    if len(runs) < max_runs:
        return None
    return 2 * sum(run.served for run in runs) > len(runs)


def verdicts_of(runs: Mapping[int, Sequence[RunJudgement]], max_runs: int = MAX_RUNS) -> dict[int, Optional[bool]]:
    """Every point's verdict from its runs so far."""
    return {count: point_verdict(judged, max_runs) for count, judged in runs.items() if judged}


def bracket(verdicts: Mapping[int, Optional[bool]], floor: int = 0) -> tuple[int, Optional[int]]:
    """(low, high): the largest N served below every N not served (the floor when none is), and the smallest N not
    served above the floor (None when none is). Undecided points count for neither."""
    high = min((n for n, verdict in verdicts.items() if verdict is False and n > floor), default=None)
    low = max((n for n, verdict in verdicts.items() if verdict is True and n > floor
               and (high is None or n < high)), default=floor)
    return low, high


def next_count(verdicts: Mapping[int, Optional[bool]], floor: int = 0, limit: int = MAX_COUNT) -> Optional[int]:
    """The N to run next; None when the search is over. `verdicts`: N -> its point's verdict so far (None: it must
    run again). An undecided point runs again first, the smallest one."""
    undecided = sorted(n for n, verdict in verdicts.items() if verdict is None)
    if undecided:
        return undecided[0]
    low, high = bracket(verdicts, floor)
    if high is None:
        count = floor + 1
        while count <= low:
            count = floor + 2 * (count - floor)
        if count > limit:
            return limit if limit > low else None
        return count
    # Between low and high no point is decided (a served one would raise low, one not served lower high).
    return None if high - low <= 1 else (low + high) // 2


@dataclass(frozen=True)
class Answer:
    largest: int  # the largest N served (the floor when none above it was)
    first_not_served: Optional[int]  # the smallest N not served above it; None: none was
    settled: bool  # the two are one apart, or the limit was served: no point left to run
    disagreeing: tuple[int, ...]  # N served above the smallest N not served (the machine's noise)
    points: int  # the points decided

    @property
    def at_least(self) -> bool:
        """The limit itself was served: the answer is a floor."""
        return self.settled and self.first_not_served is None


def answer(verdicts: Mapping[int, Optional[bool]], floor: int = 0, limit: int = MAX_COUNT) -> Answer:
    low, high = bracket(verdicts, floor)
    disagreeing = tuple(sorted(n for n, verdict in verdicts.items()
                               if verdict is True and high is not None and n > high))
    return Answer(low, high, next_count(verdicts, floor, limit) is None, disagreeing,
                  sum(1 for verdict in verdicts.values() if verdict is not None))
