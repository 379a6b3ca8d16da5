"""Is a difference between two sets of timings real? The ratio of their medians with a bootstrap confidence
interval: medians because timings are skewed and heavy-tailed, a percentile bootstrap because the ratio of
two medians has no usable closed form.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

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


MIN_BLOCKS = 4  # below this a block bootstrap draws from a handful of seconds and its interval means nothing


def block_interval(blocks: Sequence[np.ndarray], statistic: Callable[[list[np.ndarray]], float],
                   confidence: float = 0.95, resamples: int = 1000, seed: int = 0) -> Optional[tuple[float, float]]:
    """A block bootstrap interval of `statistic` over `blocks` (values that belong together, as a second's frames,
    which share the machine's state): the blocks drawn with replacement `resamples` times, seeded, and the
    statistic of each draw (a list of as many blocks); its percentiles with ranks rounded outwards (no
    interpolation across an infinite draw). None below MIN_BLOCKS blocks."""
    if len(blocks) < MIN_BLOCKS:
        return None
    values = _block_draws(blocks, statistic, resamples, seed)
    tail = (1.0 - confidence) / 2.0 * 100.0
    return (float(np.percentile(values, tail, method="lower")),
            float(np.percentile(values, 100.0 - tail, method="higher")))


def block_ratio_interval(a: Sequence[np.ndarray], b: Sequence[np.ndarray],
                         statistic: Callable[[list[np.ndarray]], float], confidence: float = 0.95,
                         resamples: int = 1000, seed: int = 0) -> Optional[RatioInterval]:
    """statistic(b) / statistic(a) with a block bootstrap interval, both sides drawn independently; None below
    MIN_BLOCKS blocks a side or for a non-positive statistic of a."""
    if len(a) < MIN_BLOCKS or len(b) < MIN_BLOCKS:
        return None
    whole_a, whole_b = statistic(list(a)), statistic(list(b))
    if not whole_a > 0:
        return None
    draws_a = _block_draws(a, statistic, resamples, seed)
    draws_b = _block_draws(b, statistic, resamples, seed + 1)
    ratios = draws_b / np.where(draws_a > 0, draws_a, np.nan)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.nanpercentile(ratios, [tail, 100.0 - tail])
    return RatioInterval(float(whole_b / whole_a), float(low), float(high), confidence)


def _block_draws(blocks: Sequence[np.ndarray], statistic: Callable[[list[np.ndarray]], float], resamples: int,
                 seed: int) -> np.ndarray:
    generator = np.random.default_rng(seed)
    return np.array([statistic([blocks[index] for index in generator.integers(0, len(blocks), len(blocks))])
                     for _ in range(resamples)], dtype=float)
