"""The race's decisions, as pure functions over what the rounds measured (a cost: lower is faster).

In the manner of F-race: every candidate gets a first round; after each round a candidate is dropped only when
the interval of its figure lies wholly on the slow side of the leader's and it was slower than the leader in
every round they shared, two at least (never on one noisy round). The rounds are interleaved, every other one
in reverse order, so that a steady drift of the machine's speed cancels between candidates; the field of a
round is capped at what the time left pays for, the candidates that can still win first.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

import numpy as np

MIN_ROUNDS_TO_DROP = 2
CONFIDENCE = 0.95
RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass
class Standing:
    name: str
    figures: dict[int, float] = field(default_factory=dict)  # round number -> its cost in that round
    samples: tuple[float, ...] = ()  # the costs pooled over its rounds (per batch, or one per round)
    can_lead: bool = True  # its accuracy verdict is settled and allows it to win

    @property
    def rounds(self) -> int:
        return len(self.figures)

    @property
    def figure(self) -> float:
        return statistics.median(self.figures.values())


@dataclass(frozen=True)
class Drop:
    name: str
    round: int
    reason: str


def interval(samples: Sequence[float], quantile: float = 50.0, confidence: float = CONFIDENCE,
             seed: int = 0) -> Optional[Interval]:
    """A percentile bootstrap interval of the samples' `quantile` (seeded: the same samples, the same
    interval); with two samples, their range; with fewer, none."""
    values = np.asarray(samples, dtype=float)
    if values.size < 2:
        return None
    if values.size == 2:
        return Interval(float(values.min()), float(values.max()))
    generator = np.random.default_rng(seed)
    resampled = np.percentile(values[generator.integers(0, values.size, (RESAMPLES, values.size))], quantile,
                              axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(resampled, [tail, 100.0 - tail])
    return Interval(float(low), float(high))


def leader(standings: Sequence[Standing]) -> Optional[Standing]:
    """The fastest candidate that can win; ties keep the given order."""
    measured = [standing for standing in standings if standing.can_lead and standing.rounds]
    return min(measured, key=lambda standing: standing.figure) if measured else None


def slower_everywhere(candidate: Standing, best: Standing) -> list[int]:
    """The rounds both ran when the candidate was slower in each of them, and there were at least
    MIN_ROUNDS_TO_DROP; else []."""
    shared = sorted(set(candidate.figures) & set(best.figures))
    if len(shared) < MIN_ROUNDS_TO_DROP or any(candidate.figures[n] <= best.figures[n] for n in shared):
        return []
    return shared


def eliminate(standings: Sequence[Standing], number: int, quantile: float = 50.0,
              unit: str = "") -> list[Drop]:
    """After round `number`: the candidates the leader beats beyond the noise."""
    best = leader(standings)
    if best is None:
        return []
    best_interval = interval(best.samples, quantile)
    if best_interval is None:
        return []
    drops = []
    for standing in standings:
        if standing is best:
            continue
        shared = slower_everywhere(standing, best)
        own = interval(standing.samples, quantile)
        if shared and own is not None and own.low > best_interval.high:
            drops.append(Drop(standing.name, number, (
                f"its {CONFIDENCE:.0%} interval {own.low:.4g}-{own.high:.4g}{unit} lies wholly above the leader "
                f"{best.name}'s {best_interval.low:.4g}-{best_interval.high:.4g}{unit}, and it was slower in each of "
                f"the {len(shared)} rounds they shared")))
    return drops


def optimistic(standing: Standing, quantile: float = 50.0, prior: Optional[float] = None) -> float:
    """The best the candidate might be: its interval's low end, else its figure; unmeasured, its `prior` (its
    way's first look), else anything."""
    if not standing.figures:
        return float("-inf") if prior is None else prior
    bound = interval(standing.samples, quantile)
    return bound.low if bound is not None else standing.figure


def next_field(standings: Sequence[Standing], cap: int, quantile: float = 50.0,
               priors: Optional[Mapping[str, float]] = None) -> tuple[list[Standing], list[Standing]]:
    """The next round's field (the leader, then the others by their best case; one not yet run by its prior) and
    the candidates the cap leaves out."""
    priors = priors or {}
    best = leader(standings)
    others = sorted((standing for standing in standings if standing is not best),
                    key=lambda standing: optimistic(standing, quantile, priors.get(standing.name)))
    ranked = ([best] if best is not None else []) + others
    return ranked[:cap], ranked[cap:]


def cap(seconds_left: float, seconds_per_run: float) -> int:
    """How many runs the time left pays for."""
    if seconds_per_run <= 0:
        raise ValueError("seconds_per_run must be positive")
    return max(0, int(seconds_left // seconds_per_run))


def interleaved(names: Sequence[str], number: int) -> list[str]:
    """Round `number`'s order (rounds numbered from 1): the field's order, every other round reversed."""
    return list(names) if number % 2 else list(names)[::-1]
