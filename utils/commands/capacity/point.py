"""One run of N cameras judged against the bounds, as pure functions of its measured frames: the p99 of the latency
from arrival and the share of frames dropped, each with a 95% interval, whether the window was steady, and so
whether N was served and whether the run is sure of it.

Intervals: a block bootstrap over the window's seconds. Frames of one second share the detector's state (a queue,
a slow batch), so seconds are resampled whole, not frames: BLOCK_S-second blocks of arrival, drawn with
replacement RESAMPLES times (seeded: the same frames give the same interval), the p99 and the drop share taken
over each draw, the 2.5th and 97.5th percentiles of those (ranks rounded outwards) the interval
(utils.record.bootstrap.block_interval). Fewer than MIN_BLOCKS blocks give none.

Steadiness: the window's two halves (by arrival) against each other. Steady when their median latencies differ by
at most STEADY_SHARE of the larger plus STEADY_MS, and their drop shares by at most STEADY_DROP: a queue that
grows, or a machine whose load changed mid-window, moves the second half away from the first.

A run is sure when its intervals lie wholly on one side: served needs the p99's interval within the budget and the
drops' within the bound, and a steady window (a queue still growing may not be served for long); not served needs
either interval wholly beyond its bound, and the window steady or its second half beyond the bounds too (a window
that got better as it went may have met them once warm).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from utils.record.bootstrap import MIN_BLOCKS, block_interval

BLOCK_S = 1.0
RESAMPLES = 1000
CONFIDENCE = 0.95
STEADY_SHARE, STEADY_MS, STEADY_DROP = 0.25, 5.0, 0.05


@dataclass(frozen=True)
class Bounds:
    budget_ms: float  # the p99 of the latency from arrival to detections
    max_drop: float  # the share of delivered frames a busy detector may drop


@dataclass(frozen=True)
class WindowFrames:
    """The measured frames of one run: when each arrived (seconds, any clock), its latency in ms (NaN when it was
    not detected) and whether it was dropped; the window's start and end on the same clock."""

    arrival_s: np.ndarray
    latency_ms: np.ndarray
    dropped: np.ndarray
    start_s: float
    end_s: float


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class PointReading:
    frames: int
    p99_ms: Optional[float]
    p99_interval: Optional[Interval]
    drop_share: Optional[float]
    drop_interval: Optional[Interval]
    steady: bool
    steadiness: str  # the halves, in words
    served: bool
    sure: bool


def p99(latency_ms: np.ndarray) -> Optional[float]:
    detected = latency_ms[~np.isnan(latency_ms)]
    return float(np.percentile(detected, 99)) if detected.size else None


def drop_share(dropped: np.ndarray) -> Optional[float]:
    return float(dropped.mean()) if dropped.size else None


def blocks(frames: WindowFrames) -> list[np.ndarray]:
    """The frames' indices by BLOCK_S-second block of arrival from the window's start, empty blocks left out."""
    numbers = np.floor((frames.arrival_s - frames.start_s) / BLOCK_S).astype(int)
    return [np.flatnonzero(numbers == number) for number in np.unique(numbers)]


def _p99_of(draw: list[np.ndarray]) -> float:
    latency = p99(np.concatenate(draw))
    return np.inf if latency is None else latency  # a draw with nothing detected: no latency meets a budget


def _drop_share_of(draw: list[np.ndarray]) -> float:
    return float(np.concatenate(draw).mean())


def block_intervals(frames: WindowFrames, seed: int = 0) -> tuple[Optional[Interval], Optional[Interval]]:
    """The 95% block-bootstrap intervals of the p99 latency and of the drop share; (None, None) below MIN_BLOCKS."""
    parts = blocks(frames)
    if len(parts) < MIN_BLOCKS:
        return None, None
    found = [block_interval([column[part] for part in parts], statistic, CONFIDENCE, RESAMPLES, seed)
             for column, statistic in ((frames.latency_ms, _p99_of), (frames.dropped.astype(float), _drop_share_of))]
    return tuple(None if bounds is None else Interval(*bounds) for bounds in found)


@dataclass(frozen=True)
class Half:
    median_ms: Optional[float]
    p99_ms: Optional[float]
    drop_share: Optional[float]

    def served(self, bounds: Bounds) -> bool:
        return (self.p99_ms is not None and self.drop_share is not None and self.p99_ms <= bounds.budget_ms
                and self.drop_share <= bounds.max_drop)


def halves(frames: WindowFrames) -> tuple[Half, Half]:
    """The window's first half and its second, by arrival."""
    middle = (frames.start_s + frames.end_s) / 2.0
    parts = []
    for chosen in (frames.arrival_s < middle, frames.arrival_s >= middle):
        latency = frames.latency_ms[chosen]
        detected = latency[~np.isnan(latency)]
        parts.append(Half(float(np.median(detected)) if detected.size else None, p99(latency),
                          drop_share(frames.dropped[chosen])))
    return parts[0], parts[1]


def steadiness(frames: WindowFrames) -> tuple[bool, str]:
    """Whether the window's halves agree (module docstring), and what they were."""
    first, second = halves(frames)
    (first_ms, first_drop), (second_ms, second_drop) = ((first.median_ms, first.drop_share),
                                                        (second.median_ms, second.drop_share))
    if first_ms is None or second_ms is None or first_drop is None or second_drop is None:
        return False, "a half of the window detected no frame"
    steady = (abs(second_ms - first_ms) <= STEADY_SHARE * max(first_ms, second_ms) + STEADY_MS
              and abs(second_drop - first_drop) <= STEADY_DROP)
    return steady, (f"halves: median latency {first_ms:.1f} then {second_ms:.1f} ms, dropped {first_drop:.1%} then "
                    f"{second_drop:.1%}: {'steady' if steady else 'not steady'}")


def judge(frames: WindowFrames, bounds: Bounds, seed: int = 0) -> PointReading:
    latency, dropped = p99(frames.latency_ms), drop_share(frames.dropped)
    p99_interval, drop_interval = block_intervals(frames, seed)
    steady, said = steadiness(frames)
    served = (latency is not None and dropped is not None and latency <= bounds.budget_ms
              and dropped <= bounds.max_drop)
    if served:
        sure = (steady and p99_interval is not None and p99_interval.high <= bounds.budget_ms
                and drop_interval.high <= bounds.max_drop)
    else:
        beyond = p99_interval is not None and (p99_interval.low > bounds.budget_ms
                                               or drop_interval.low > bounds.max_drop)
        # Nothing detected is not served whatever the halves say.
        sure = latency is None or (beyond and (steady or not halves(frames)[1].served(bounds)))
    return PointReading(int(frames.arrival_s.size), latency, p99_interval, dropped, drop_interval, steady, said,
                        served, bool(sure))
