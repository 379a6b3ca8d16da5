"""Summary statistics of repeated timing measurements.

Outliers are only counted and flagged, never dropped: a slow iteration is part of what was measured.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

OUTLIER_IQR_FACTOR = 1.5

SUMMARY_FIELDS = (
    "count", "mean", "std", "min", "p50", "p90", "p99", "max", "total", "iqr", "cv", "spread", "outliers",
)


def _tukey_fences(values: np.ndarray) -> tuple[float, float]:
    q1, q3 = np.percentile(values, [25, 75])
    spread = OUTLIER_IQR_FACTOR * (q3 - q1)
    return q1 - spread, q3 + spread


def outlier_mask(values: Sequence[float]) -> list[bool]:
    """True for each value outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (linear-interpolated quartiles)."""
    array = np.asarray(values, dtype=float)
    if array.size == 0:
        return []
    low, high = _tukey_fences(array)
    return [bool(flag) for flag in (array < low) | (array > high)]


def describe(values_ms: Sequence[float]) -> dict[str, float | int | None]:
    """count, mean, sample std (0 below 2 values), min, p50, p90, p99, max, total, iqr, cv = std / mean
    (None when mean is 0), spread = iqr / p50 (None when p50 is 0: torch.utils.benchmark's noise measure, which one
    outlier cannot inflate as it does std), outliers = how many values fall outside the 1.5 IQR fences.
    Empty input gives count 0 and None elsewhere."""
    array = np.asarray(values_ms, dtype=float)
    if array.size == 0:
        return {field: (0 if field == "count" else None) for field in SUMMARY_FIELDS}
    mean = float(array.mean())
    std = float(array.std(ddof=1)) if array.size > 1 else 0.0
    p25, p50, p75, p90, p99 = (float(p) for p in np.percentile(array, [25, 50, 75, 90, 99]))
    return {
        "count": int(array.size),
        "mean": mean,
        "std": std,
        "min": float(array.min()),
        "p50": p50,
        "p90": p90,
        "p99": p99,
        "max": float(array.max()),
        "total": float(array.sum()),
        "iqr": p75 - p25,
        "cv": std / mean if mean != 0 else None,
        "spread": (p75 - p25) / p50 if p50 != 0 else None,
        "outliers": sum(outlier_mask(array)),
    }


def repeat_spread(times_by_batch: Iterable[Sequence[float]]) -> float | None:
    """The machine's noise apart from the images' own differences: for each batch timed in two passes or more, the
    spread (interquartile range over median) of its times across the passes; the median of those over batches.
    None when no batch was timed twice. Over different images the spread also holds how much the images differ
    (a larger file loads longer, more detections take longer to draw); the same batch again differs only by noise,
    which is what torch.utils.benchmark's spread measures: one workload, repeated."""
    spreads = [describe(times)["spread"] for times in times_by_batch if len(times) > 1]
    spreads = [spread for spread in spreads if spread is not None]
    return float(np.median(spreads)) if spreads else None


def median_confidence_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median: the order statistics x_(j) and x_(n+1-j) with j
    the largest rank such that P(Binomial(n, 1/2) < j) <= (1 - confidence) / 2. Timings are skewed and
    heavy-tailed, so no normal approximation. None when n is too small for that confidence (n < 6 at 95%)."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None
    alpha_half = (1.0 - confidence) / 2.0
    cumulative, rank = 0.0, 0
    for j in range(n + 1):
        # cumulative = P(X < j) = P(X <= j - 1)
        if cumulative > alpha_half:
            break
        rank = j
        cumulative += math.comb(n, j) / 2 ** n  # integer power: exact for any n, no float overflow
    if rank < 1:
        return None
    return ordered[rank - 1], ordered[n - rank]


MET, MISSED, NOT_RESOLVED = "met", "missed", "not resolved"
# The benchmark scripts' interval of a median ratio over rounds: from 5 rounds on (with 5, the lowest and the
# highest round).
GOAL_INTERVAL = 0.90


def judge_against(median: float, interval: tuple[float, float] | None, limit: float,
                  higher_is_better: bool) -> str:
    """MET, MISSED or NOT_RESOLVED for a figure measured over rounds against a goal's limit (the limit itself
    meets it). With an interval of the median, met needs all of it on the goal's side and missed all of it on
    the other; where it straddles the limit the rounds cannot tell. Without one, the median decides."""
    low, high = interval if interval is not None else (median, median)
    if higher_is_better:
        low, high, limit = -high, -low, -limit  # the same test on the negated axis
    if high <= limit:
        return MET
    if low > limit:
        return MISSED
    return NOT_RESOLVED


def median_ci_half_width(values: Sequence[float], confidence: float = 0.95) -> float | None:
    """Half the confidence interval's width as a fraction of the median (0.02 = within +-2%)."""
    interval = median_confidence_interval(values, confidence)
    if interval is None:
        return None
    median = float(np.median(values))
    return (interval[1] - interval[0]) / 2.0 / median if median > 0 else None


def pass_spread(pass_medians: Sequence[float]) -> float | None:
    """The slowest timed pass's median over the fastest's: how far the same configuration moved between its
    own passes (the machine's speed, or the process's page faults). None below two passes."""
    values = [value for value in pass_medians if value > 0]
    if len(values) < 2:
        return None
    return max(values) / min(values)
