"""The schedule of passes over the data: the one source of what runs, in which order, and how many batches
the progress bar expects.

warm-up -> timed pass 0 (writes detections and images) -> layer-timing pass -> profiled batch -> timed passes
1, 2, ... With two or more repeats, clean passes lie on both sides of the instrumented ones, so a machine that
drifts during the run does not show up as hook overhead. `benchmark.min_time_s` adds timed passes until that
much time has been measured; `benchmark.target_ci` adds them until the per-image median is known that
precisely, bounded by `benchmark.max_time_s`. `benchmark.timed_batches` times only the first batches of each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from utils.record.statistics import median_ci_half_width
from utils.record.steps import PassKind


@dataclass(frozen=True)
class PlannedPass:
    kind: PassKind
    index: int
    max_batches: Optional[int]  # None: the whole dataset
    writes_outputs: bool = False
    batch_indices: Optional[tuple[int, ...]] = None  # these batches instead of the first max_batches
    cold_batches: frozenset[int] = frozenset()  # batches whose input shape runs for the first time


@dataclass(frozen=True)
class PassSchedule:
    """What the benchmark.* keys ask of the passes: the timed repeats, the measured time or the precision that adds
    more of them (bounded by max_time_s), and the instrumented passes."""

    repeats: int = 1
    timed_batches: Optional[int] = None  # None: every batch
    min_time_s: float = 0.0
    target_ci: Optional[float] = None
    max_time_s: float = float("inf")
    layer_timing: bool = False
    layer_timing_batches: Optional[int] = None  # None: every batch
    profiler: bool = False

    @classmethod
    def of(cls, benchmark: Any) -> "PassSchedule":
        """From the config's benchmark section."""
        return cls(benchmark.repeats, benchmark.timed_batches, benchmark.min_time_s, benchmark.target_ci,
                   benchmark.max_time_s, benchmark.layer_timing, benchmark.layer_timing_batches, benchmark.profiler)


@dataclass(frozen=True)
class WarmupBatches:
    """The warm-up's batches: the first `count`, or `indices` in that order; `cold`: the batches whose input shape
    no warm-up batch ran."""

    count: int = 0
    indices: Optional[tuple[int, ...]] = None
    cold: frozenset[int] = frozenset()


class PassPlan:
    def __init__(self, schedule: PassSchedule, batch_images: Sequence[int], warmup: WarmupBatches = WarmupBatches()):
        """`batch_images`: the files in each batch (the progress bar counts files)."""
        batches = len(batch_images)
        self.batches = batches
        self.batch_images = tuple(batch_images)
        count, warmup_batches = warmup.count, warmup.indices
        if warmup_batches is not None and warmup_batches == tuple(range(len(warmup_batches))):
            count, warmup_batches = len(warmup_batches), None  # the first batches: the loader's own order
        self.warmup_batches = warmup_batches
        self.warmup = len(warmup_batches) if warmup_batches is not None else min(count, batches)
        self.cold_batches = frozenset(warmup.cold)
        self.repeats = schedule.repeats
        self.timed_batches = min(schedule.timed_batches or batches, batches)
        self.min_time_s = schedule.min_time_s
        self.layer_timing = schedule.layer_timing
        self.layer_batches = min(schedule.layer_timing_batches or self.timed_batches, batches)
        self.profiler = schedule.profiler
        self.target_ci = schedule.target_ci
        self.max_time_s = schedule.max_time_s
        self.measured_s = 0.0
        self.per_image_ms: list[float] = []
        self.extra_timed_passes = 0

    def batches_in(self, planned: PlannedPass) -> int:
        return self.batches if planned.max_batches is None else min(planned.max_batches, self.batches)

    @property
    def total_batches(self) -> int:
        """What the progress bar expects; grows when min_time_s adds a pass."""
        instrumented = (self.layer_batches if self.layer_timing else 0) + (1 if self.profiler else 0)
        return self.warmup + (self.repeats + self.extra_timed_passes) * self.timed_batches + instrumented

    @property
    def total_images(self) -> int:
        """The progress bar's total in files: every pass's batches counted with the files they hold."""
        sizes = self.batch_images
        warmup = (sum(sizes[i] for i in self.warmup_batches) if self.warmup_batches is not None
                  else sum(sizes[:self.warmup]))
        instrumented = (sum(sizes[:self.layer_batches]) if self.layer_timing else 0) + (
            sizes[0] if self.profiler and sizes else 0)
        return warmup + (self.repeats + self.extra_timed_passes) * sum(sizes[:self.timed_batches]) + instrumented

    def add_measured(self, seconds: float, per_image_ms: list[float] = ()) -> None:
        """A timed pass's measured time and its batches' pipeline milliseconds per image."""
        self.measured_s += seconds
        self.per_image_ms.extend(per_image_ms)

    @property
    def ci_half_width(self) -> Optional[float]:
        return median_ci_half_width(self.per_image_ms) if self.per_image_ms else None

    def _wants_more(self, index: int) -> bool:
        if index < self.repeats or self.measured_s < self.min_time_s:
            return True
        if self.target_ci is None or self.measured_s >= self.max_time_s:
            return False
        half_width = self.ci_half_width
        return half_width is None or half_width > self.target_ci

    def passes(self) -> Iterator[PlannedPass]:
        if self.warmup:
            yield PlannedPass(PassKind.WARMUP, 0, self.warmup, batch_indices=self.warmup_batches)
        index = 0
        while self._wants_more(index):
            if index >= self.repeats:
                self.extra_timed_passes += 1
            timed = None if self.timed_batches == self.batches else self.timed_batches
            yield PlannedPass(PassKind.TIMED, index, timed, writes_outputs=index == 0,
                              cold_batches=self.cold_batches if index == 0 else frozenset())
            if index == 0:
                if self.layer_timing:
                    yield PlannedPass(PassKind.LAYERS, 0, self.layer_batches)
                if self.profiler:
                    yield PlannedPass(PassKind.PROFILER, 0, 1)
            index += 1
