"""The regression gate of `compare --fail-above PCT`: is NEW worse than BASE by more than PCT, beyond the noise?

Pure functions over plain numbers; utils/commands/compare/gate_runs.py reads them out of two run directories.

Method. Latency is the median of the pipeline's milliseconds per image over the timed batches (steps_timer.csv,
warm batches of the timed passes); its interval is the percentile bootstrap of median(new) / median(base)
(utils.record.bootstrap: both sides resampled independently, 4000 times, seeded). Throughput is images over
seconds of the same batches; its interval resamples the batches of each side the same way and takes
throughput(new) / throughput(base). A camera run's p99 latency from arrival and its frames/s detected are drawn
from its window's seconds whole (a block bootstrap, utils.record.bootstrap.block_ratio_interval: a second's frames
share the detector's state), the ratio new / base taken over the draws. A figure a run holds once (a LoadGen
scenario's samples/s and p99, peak memory, mAP) has no samples to resample: it is judged on the two values alone,
and the verdict says so.

A figure trips the gate only when both hold: its change is worse than PCT, and its interval excludes no change
(so a slow outlier batch or two cannot fail a build).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np

from utils.record.bootstrap import MIN_BLOCKS, MIN_SAMPLES, RESAMPLES, block_ratio_interval, median_ratio_interval

CONFIDENCE = 0.95
LOWER_IS_BETTER = {"latency": True, "throughput": False, "peak_memory": True, "map_drop": True, "p99": True,
                   "fps": False}


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    confidence: float
    how: str  # how the interval was made, for the output


@dataclass(frozen=True)
class Figure:
    """One metric of both runs. `change` is what PCT is compared with: percent of base (latency, throughput,
    peak memory) or percentage points of mAP (map_drop); positive is worse. `interval` bounds the same change."""

    metric: str
    name: str
    unit: str
    base: float
    new: float
    change: float
    change_unit: str  # "%" or "points"
    interval: Optional[Interval]
    note: str = ""


@dataclass(frozen=True)
class Verdict:
    figure: Figure
    threshold: float
    regressed: bool
    reason: str


def parse_threshold(text: str) -> float:
    """--fail-above's PCT: a finite number, zero or more. Raises ValueError with the reason."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"--fail-above {text!r} is not a number; give a percentage such as 5 or 2.5") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"--fail-above {text} must be a finite number of at least 0 (a percentage such as 5)")
    return value


def throughput_ratio_interval(ms_base: Sequence[float], images_base: Sequence[int], ms_new: Sequence[float],
                              images_new: Sequence[int], confidence: float = CONFIDENCE,
                              resamples: int = RESAMPLES, seed: int = 0) -> Optional[tuple[float, float, float]]:
    """throughput(new) / throughput(base), throughput = sum(images) / sum(seconds) over batches, with a
    percentile bootstrap interval resampling each side's batches independently. None below MIN_SAMPLES batches
    a side."""
    base_ms, base_images = np.asarray(ms_base, float), np.asarray(images_base, float)
    new_ms, new_images = np.asarray(ms_new, float), np.asarray(images_new, float)
    if base_ms.size < MIN_SAMPLES or new_ms.size < MIN_SAMPLES or base_ms.sum() <= 0 or new_ms.sum() <= 0:
        return None
    generator = np.random.default_rng(seed)
    pick_base = generator.integers(0, base_ms.size, (resamples, base_ms.size))
    pick_new = generator.integers(0, new_ms.size, (resamples, new_ms.size))
    rate_base = base_images[pick_base].sum(axis=1) / base_ms[pick_base].sum(axis=1)
    rate_new = new_images[pick_new].sum(axis=1) / new_ms[pick_new].sum(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(rate_new / rate_base, [tail, 100.0 - tail])
    ratio = (new_images.sum() / new_ms.sum()) / (base_images.sum() / base_ms.sum())
    return float(ratio), float(low), float(high)


def latency_figure(base_ms_per_image: Sequence[float], new_ms_per_image: Sequence[float]) -> Figure:
    """Median pipeline ms per image; change in percent of base, interval from the median ratio's bootstrap."""
    base, new = float(np.median(base_ms_per_image)), float(np.median(new_ms_per_image))
    found = median_ratio_interval(base_ms_per_image, new_ms_per_image, CONFIDENCE)
    interval = None if found is None else Interval(
        (found.low - 1) * 100, (found.high - 1) * 100, found.confidence,
        f"bootstrap of median(new)/median(base) over {len(base_ms_per_image)} and {len(new_ms_per_image)} "
        "timed batches")
    return Figure("latency", "median latency", "ms/image", base, new, (new / base - 1) * 100, "%", interval,
                  "" if interval else f"fewer than {MIN_SAMPLES} timed batches a side: no interval")


def throughput_figure(ms_base: Sequence[float], images_base: Sequence[int], ms_new: Sequence[float],
                      images_new: Sequence[int]) -> Figure:
    """Images/s over the timed batches; change = percent of base lost (positive is slower)."""
    base = 1000.0 * sum(images_base) / sum(ms_base)
    new = 1000.0 * sum(images_new) / sum(ms_new)
    found = throughput_ratio_interval(ms_base, images_base, ms_new, images_new)
    # A throughput ratio r loses (1 - r) of base: the ratio's high end is the change's low end.
    interval = None if found is None else Interval(
        (1 - found[2]) * 100, (1 - found[1]) * 100, CONFIDENCE,
        f"bootstrap of images/s(new)/images/s(base) over {len(ms_base)} and {len(ms_new)} timed batches")
    return Figure("throughput", "throughput", "images/s", base, new, (1 - new / base) * 100, "%", interval,
                  "" if interval else f"fewer than {MIN_SAMPLES} timed batches a side: no interval")


def block_figure(metric: str, name: str, unit: str, blocks: tuple[Sequence[np.ndarray], Sequence[np.ndarray]],
                 statistic: Callable[[list[np.ndarray]], float]) -> Figure:
    """A figure of blocks of samples (a camera window's seconds), base's blocks then new's; change in percent of
    base in the direction that is worse, its interval from the block bootstrap of statistic(new) / statistic(base)."""
    base_blocks, new_blocks = blocks
    base, new = statistic(list(base_blocks)), statistic(list(new_blocks))
    lower = LOWER_IS_BETTER[metric]
    found = block_ratio_interval(base_blocks, new_blocks, statistic, CONFIDENCE)
    interval = None
    if found is not None:
        low, high = ((found.low - 1) * 100, (found.high - 1) * 100) if lower else ((1 - found.high) * 100,
                                                                                   (1 - found.low) * 100)
        interval = Interval(low, high, CONFIDENCE, f"block bootstrap over {len(base_blocks)} and {len(new_blocks)} "
                                                   "seconds of the camera windows")
    change = (new / base - 1) * 100 if lower else (1 - new / base) * 100
    return Figure(metric, name, unit, base, new, change, "%", interval,
                  "" if interval else f"fewer than {MIN_BLOCKS} seconds a side: no interval")


def single_value_figure(metric: str, name: str, unit: str, base: float, new: float, note: str) -> Figure:
    """A figure each run holds once: change in percent of base in the direction that is worse."""
    worse = (new / base - 1) * 100 if LOWER_IS_BETTER[metric] else (1 - new / base) * 100
    return Figure(metric, name, unit, base, new, worse, "%", None, note)


def map_drop_figure(base_map: float, new_map: float, interval_points: Optional[tuple[float, float]],
                    how: str = "") -> Figure:
    """mAP@0.5:0.95 of both runs; change = how far new fell below base, in percentage points of mAP."""
    interval = None if interval_points is None else Interval(interval_points[0], interval_points[1], CONFIDENCE, how)
    return Figure("map_drop", "mAP@0.5:0.95 drop", "mAP", base_map, new_map, (base_map - new_map) * 100, "points",
                  interval, "" if interval else "one mAP a run, no per-image samples kept: no interval")


def judge(figure: Figure, threshold: float) -> Verdict:
    """Regressed when the change is worse than the threshold and the interval (when there is one) lies wholly
    on the worse side of no change."""
    beyond = figure.change > threshold
    if figure.interval is None:
        if beyond:
            return Verdict(figure, threshold, True, "worse than the threshold (no interval: judged on the values "
                                                    "alone)")
        return Verdict(figure, threshold, False, "within the threshold (no interval: judged on the values alone)")
    excludes_no_change = figure.interval.low > 0
    if beyond and excludes_no_change:
        return Verdict(figure, threshold, True, "worse than the threshold, and the interval excludes no change")
    if not excludes_no_change and figure.interval.high >= 0:
        return Verdict(figure, threshold, False, "within noise: the interval includes no change")
    if figure.interval.high < 0:
        return Verdict(figure, threshold, False, "better, beyond the noise")
    return Verdict(figure, threshold, False, "worse beyond the noise, but within the threshold")


def verdict_line(verdict: Verdict) -> str:
    """One line that names the figure, both values, the interval and the threshold."""
    figure, unit = verdict.figure, verdict.figure.change_unit
    sign = "+" if figure.change >= 0 else ""
    worse = "worse" if figure.change >= 0 else "better"
    change = f"{sign}{figure.change:.2f} {unit} ({worse})" if unit == "points" else \
        f"{abs(figure.change):.1f}% {worse}"
    if figure.interval is not None:
        interval = (f"{figure.interval.confidence:.0%} interval of the change [{figure.interval.low:+.1f}, "
                    f"{figure.interval.high:+.1f}] {'points' if unit == 'points' else '%'}")
    else:
        interval = f"no interval ({figure.note})" if figure.note else "no interval"
    status = "REGRESSION" if verdict.regressed else "ok"
    return (f"gate {figure.metric}: {status}: {figure.name} base {figure.base:.4g} -> new {figure.new:.4g} "
            f"{figure.unit}, {change}; {interval}; threshold {verdict.threshold:g} "
            f"{'points' if unit == 'points' else '%'}: {verdict.reason}")
