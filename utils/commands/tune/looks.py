"""How long each run of the race is, as pure functions. A way's first look is short: one timed pass over a few
batches, enough for a median with a 95% interval that no one or two odd batches decide, and its verdict on the
fewest images a verdict can be decided on; the runs of later rounds are full (every batch, every timed pass the
config asks for). Before any full run has run, what one costs is worked out from the way's first look.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from utils.record.statistics import median_confidence_interval

FIRST_LOOK, FULL = "first look", "full"
# The fastest and the slowest batches a first look's median interval leaves out: one or two odd batches (a page
# fault storm, a neighbour's burst) cannot move it.
KEPT_OUT = 2
CONFIDENCE = 0.95


def look_batches(confidence: float = CONFIDENCE, kept_out: int = KEPT_OUT) -> int:
    """The fewest timed batches whose median has a distribution-free `confidence` interval
    (utils.record.statistics.median_confidence_interval) with `kept_out` batches below it and as many above."""
    batches = 1
    while True:
        interval = median_confidence_interval(range(batches), confidence)
        if interval is not None and interval[0] >= kept_out:
            return batches
        batches += 1


def verdict_images(configured: Optional[int], minimum: int) -> int:
    """The images a first look's verdict scores: `minimum` (below it an interval over images means nothing,
    utils.checks.accuracy.label_free.MIN_IMAGES), or fewer where the config's accuracy pass asks for fewer."""
    return minimum if configured is None else min(configured, minimum)


@dataclass(frozen=True)
class Look:
    """How long a run is. `timed_batches` None: every batch in the config's timed passes (a full run, or a
    LoadGen goal, whose test times its own queries)."""

    kind: str
    timed_batches: Optional[int] = None

    @property
    def overrides(self) -> list[str]:
        """The settings that make the run this long (after the user's --set: a first look stays short)."""
        if self.timed_batches is None:
            return []
        return ["benchmark.repeats=1", f"benchmark.timed_batches={self.timed_batches}", "benchmark.min_time_s=0",
                "benchmark.target_ci=null"]


FULL_RUN = Look(FULL)


def first_look(batch: int, check_images: int, images: int, timed_by_passes: bool) -> Look:
    """A way's first look at batch size `batch` on a folder of `images`: one timed pass over the verdict's images
    (so that another schedule's detections are compared with the judged run's on the images its verdict rests
    on), at least look_batches() batches, at most the folder's."""
    if not timed_by_passes:
        return Look(FIRST_LOOK)
    batch = max(batch, 1)
    return Look(FIRST_LOOK, min(max(look_batches(), math.ceil(check_images / batch)), math.ceil(images / batch)))


def check_overrides(images: int, grow_to: Optional[int] = None) -> list[str]:
    """A check that scores `images` images first; a verdict without labels that is undecided on them may score
    more, up to `grow_to` where given (a first look's check stays at `images`)."""
    grown = [] if grow_to is None else [f"benchmark.accuracy.max_images={max(images, grow_to)}"]
    return [f"benchmark.accuracy.images={images}", *grown]


def images_timed(look_batches_: Optional[int], batch: int, images: int) -> int:
    """How many of the folder's first images a run's timed pass covers (all of them for a full run)."""
    return images if look_batches_ is None else min(images, look_batches_ * batch)


def full_run_seconds(look_seconds: float, look_timed_images: int, ms_per_image: float, images: int,
                     passes: int) -> float:
    """What a full run should take, from a first look that took `look_seconds` (its process's start apart) and
    timed `look_timed_images` images at `ms_per_image`: the look less its timed pass, plus `passes` timed
    passes over `images` images at the same speed. The look's accuracy check stays in: an upper bound for a run
    that only times."""
    timed = look_timed_images * ms_per_image / 1000.0
    return max(look_seconds - timed, 0.0) + passes * images * ms_per_image / 1000.0


def look_floor_seconds(seconds: float, start_s: float, preparation_s: float, own_images: int,
                       ms_per_image: float) -> float:
    """What any way's first look costs at least, from one that took `seconds` with a process start of `start_s`:
    less what only that look paid, preparing its model (the cache keeps it) and its own passes over the
    `own_images` it ran (its timed pass and its side of the check), which another way runs at its own speed."""
    return start_s + max(0.0, seconds - preparation_s - own_images * ms_per_image / 1000.0)


def preparation_seconds(preparation: Mapping) -> float:
    """What a run spent preparing its model that later runs of its way take from the cache: the ONNX export, the
    int8 quantization and its accuracy-control search (summary.json runtime.preparation)."""
    control = preparation.get("accuracy_control") or {}
    return float((0.0 if preparation.get("cache_hit", True) else preparation.get("export_s") or 0.0)
                 + (preparation.get("quantize_s") or 0.0) + (control.get("search_s") or 0.0))


def describe(kind: str, timed_batches: Sequence[int], passes: Optional[int], images: int,
             check_images: Sequence[int]) -> str:
    """A round's length in words: its runs' timed batches (none given: every batch), its timed passes over the
    folder's `images` (None: LoadGen's own timing), and the images its checks scored first."""
    if passes is None:
        timing = "LoadGen's own timing"
    elif kind == FIRST_LOOK and timed_batches:
        counts = sorted(set(timed_batches))
        batches = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        timing = f"1 timed pass of {batches} batch(es)"
    else:
        timing = f"every batch ({images} images) in {passes} timed pass(es)"
    checked = sorted(set(check_images))
    checks = ""
    if checked:
        checks = f", verdicts on {checked[0] if len(checked) == 1 else f'{checked[0]}-{checked[-1]}'} images"
    return f"{kind}{'s' if kind == FIRST_LOOK else ' runs'}: {timing}{checks}"


def looks_text(kinds: Mapping[int, str]) -> str:
    """Which of a candidate's rounds (round number -> look kind) were first looks and which full runs."""
    parts = []
    for kind in (FIRST_LOOK, FULL):
        rounds = sorted(number for number, seen in kinds.items() if seen == kind)
        if rounds:
            parts.append(f"{kind} (round{'s' if len(rounds) > 1 else ''} {', '.join(map(str, rounds))})")
    return "; ".join(parts)
