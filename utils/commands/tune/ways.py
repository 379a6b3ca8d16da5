"""How the race spends its first rounds on the ways of computing (runtime x precision x the other non-scheduling
keys), as pure functions: which ways the CPU's facts favour, the one candidate of each way its first look runs,
which ways survive that look (successive halving), which reduced precisions the folder holds too few images to
judge, and, at the end, how far each way got and why it stopped.

Every way gets a first look before any way gets a second run: a budget that cannot pay for that is refused at
once. The first look is short (utils/commands/tune/looks.py) and checks the way's accuracy before its other
schedules spend time on full runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from utils.commands.tune.looks import FIRST_LOOK, FULL
from utils.commands.tune.space import BATCH, INT8_FLAGS, NATIVE_FLAGS, PINNING, PRECISION, STREAMS, THREADS, Candidate

Way = tuple[tuple[str, str], ...]
# A way whose first look is this close to the best way's is kept whatever its rank: one run is noisy.
HALVING_SLACK = 0.10
KEPT_AT_LEAST = 2  # the ways left after halving (fewer when fewer had a first look): F-race decides between them


def native_parts(precision: str, flags: frozenset[str]) -> Optional[list[str]]:
    """The flags that make a reduced precision fast here (every part of `int8+bf16` needs its own), or None when
    some part has none; [] for fp32."""
    present: list[str] = []
    for part in precision.split("+"):
        if part == "fp32":
            continue
        needed = NATIVE_FLAGS.get(part) or (INT8_FLAGS if part == "int8" else ())
        found = [flag for flag in needed if flag in flags]
        if not found:
            return None
        present += [flag for flag in found if flag not in present]
    return present


def way_rank(precision: str, flags: frozenset[str]) -> int:
    """Lower first: a reduced precision with its native instructions (what the CPU's facts say should win), then
    fp32, then a reduced precision without them (emulated or two instructions a multiply-add)."""
    if precision == "fp32":
        return 0
    return -1 if native_parts(precision, flags) else 1


def first_look_order(ways: Sequence[Way], flags: frozenset[str]) -> list[Way]:
    """The ways in the order their first looks run: by rank (stable: the space's order within a rank)."""
    return sorted(ways, key=lambda way: way_rank(dict(way).get(PRECISION, "fp32"), flags))


def _schedule_preference(candidate: Candidate) -> tuple:
    """What a way's first look runs at: batch 1 (the smallest), every thread, no pinning, every stream."""
    values = candidate.values

    def number(key: str, default: int) -> int:
        value = values.get(key, "")
        return int(value) if value.isdigit() else default

    return (number(BATCH, 1), -number(THREADS, 0), values.get(PINNING) == "true", -number(STREAMS, 0))


def first_looks(candidates: Sequence[Candidate], flags: frozenset[str]) -> list[Candidate]:
    """One candidate of each way, in first-look order."""
    by_way: dict[Way, list[Candidate]] = {}
    for candidate in candidates:
        by_way.setdefault(candidate.way, []).append(candidate)
    return [min(by_way[way], key=_schedule_preference) for way in first_look_order(list(by_way), flags)]


def way_name(way: Way) -> str:
    return " ".join(value for _, value in way) or "the one way"


@dataclass(frozen=True)
class Halving:
    kept: list[Way]
    dropped: dict[Way, str]  # way -> why


def halve(figures: Mapping[Way, float]) -> Halving:
    """After the first looks, of the ways whose look can win (`figures`: their cost): the faster half (at least
    KEPT_AT_LEAST) and every way within HALVING_SLACK of the fastest go on; the others stop, saying their rank."""
    ranked = sorted(figures, key=lambda way: figures[way])
    if not ranked:
        return Halving([], {})
    keep = max(KEPT_AT_LEAST, math.ceil(len(ranked) / 2))
    best = figures[ranked[0]]
    kept, dropped = [], {}
    for position, way in enumerate(ranked, 1):
        if position <= keep or figures[way] <= best * (1.0 + HALVING_SLACK):
            kept.append(way)
        else:
            dropped[way] = (f"halved after the first looks: its way ranked {position} of {len(ranked)}, "
                            f"x{figures[way] / best:.2f} the time of the fastest way ({way_name(ranked[0])}); the "
                            f"{keep} fastest and those within {HALVING_SLACK:.0%} go on")
    return Halving(kept, dropped)


def folder_needed(minimum: int, calibration_images: int) -> int:
    """The fewest images a folder needs so that int8, calibrated on its last images (at most half, at most
    `calibration_images`), still scores `minimum`."""
    images = minimum
    while images - min(calibration_images, images // 2) < minimum:
        images += 1
    return images


def undecidable(precisions: Sequence[str], images: int, labelled: bool, calibration_images: int,
                own_calibration: bool, minimum: int) -> dict[str, str]:
    """The reduced precisions the folder holds too few images to judge, each with the number it needs. Without
    labels the verdict's interval over images needs `minimum` scored images; int8 scores only the images it was
    not calibrated on (all of them with its own calibration folder). With labels nothing is refused here."""
    if labelled:
        return {}
    refused = {}
    for precision in precisions:
        if precision == "fp32":
            continue
        int8 = "int8" in precision.split("+")
        calibrated = 0 if own_calibration or not int8 else min(calibration_images, images // 2)
        scored = images - calibrated
        if scored >= minimum:
            continue
        needed = minimum if calibrated == 0 else folder_needed(minimum, calibration_images)
        refused[precision] = (
            f"the folder holds {images} image(s)" + (f", of which int8 calibrates on {calibrated}" if calibrated else "")
            + f": {scored} to score, fewer than the {minimum} a verdict without labels needs; give {needed} images or "
              "more" + (" (or runtime.calibration.path, a folder of other images)" if calibrated else "")
            + ", or labels (dataset.labels)")
    return refused


def way_lines(ways: Sequence[Way], entries: Sequence, rounds: int,
              best_of: Callable[[object, str], Optional[tuple[float, str]]]) -> list[str]:
    """For every way, in first-look order: its first look's figure, how far it got in full runs and why it
    stopped. `entries`: the race's (utils/commands/tune/state.py); `best_of(entry, look)`: its figure over its runs of
    that length (FIRST_LOOK or FULL) and how it is shown, None without one; `rounds`: how many ran."""
    lines = []
    for way in ways:
        mine = [entry for entry in entries if entry.candidate.way == way]
        ran = [entry for entry in mine if entry.complete]
        reasons = [entry.dropped["reason"] for entry in mine if entry.dropped]
        common = max(reasons, key=reasons.count) if reasons else ""
        if not ran:
            lines.append(f"{way_name(way)}: no run completed; {common or 'never run'}")
            continue
        reached = max(run.round for entry in ran for run in entry.complete)
        looks = [figure for figure in (best_of(entry, FIRST_LOOK) for entry in ran) if figure is not None]
        full = [figure for figure in (best_of(entry, FULL) for entry in ran) if figure is not None]
        seen = (f"first look {min(looks)[1]}; " if looks else "") + (
            f"best full run {min(full)[1]}" if full else "no full run")
        state = ("in the race at its end" if any(entry.dropped is None for entry in mine) else f"stopped: {common}")
        lines.append(f"{way_name(way)}: {len(ran)} of {len(mine)} schedule(s) run, up to round {reached} of "
                     f"{rounds}; {seen}; {state}")
    return lines
