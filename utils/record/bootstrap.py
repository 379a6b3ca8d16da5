"""Is a difference between two sets of timings real? The ratio of their medians with a bootstrap confidence
interval: medians because timings are skewed and heavy-tailed, a percentile bootstrap because the ratio of
two medians has no usable closed form.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

MIN_SAMPLES = 3  # below this a resampled median takes a handful of values and the interval means nothing
RESAMPLES = 4000


@dataclass(frozen=True)
class RatioInterval:
    ratio: float  # median(b) / median(a)
    low: float
    high: float
    confidence: float

    @property
    def significant(self) -> bool:
        """The interval excludes 1: b differs from a beyond the spread of the samples."""
        return self.low > 1.0 or self.high < 1.0


def median_ratio_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95,
                          resamples: int = RESAMPLES, seed: int = 0) -> Optional[RatioInterval]:
    """median(b) / median(a) with a percentile bootstrap interval: both samples are resampled independently
    with replacement, `resamples` times, from a generator seeded with `seed` (the same inputs give the same
    interval). None when either sample has fewer than MIN_SAMPLES values or a's median is not positive."""
    first, second = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if first.size < MIN_SAMPLES or second.size < MIN_SAMPLES or np.median(first) <= 0:
        return None
    generator = np.random.default_rng(seed)
    medians_a = np.median(first[generator.integers(0, first.size, (resamples, first.size))], axis=1)
    medians_b = np.median(second[generator.integers(0, second.size, (resamples, second.size))], axis=1)
    ratios = medians_b / np.where(medians_a > 0, medians_a, np.nan)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.nanpercentile(ratios, [tail, 100.0 - tail])
    return RatioInterval(float(np.median(second) / np.median(first)), float(low), float(high), confidence)
