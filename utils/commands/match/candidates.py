"""The recipes `match` tries, in an order that finds the common ones first: the exporter's recipe (the config's,
as resolved), then each single change of one step (channels, resize mode, pad value and place, normalisation,
resampling), then pairs: the best single with each other step's change, those that matched best alone first,
then triples on the best pair the same way.
Each preprocessing is tried with every postprocessing the layout allows (NMS IoU, class-agnostic or not, the cap),
at a cut just below the application's lowest score. Pure: recipes and orders only; trial.py runs them."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Iterable, Iterator, Sequence

from pipelines.exported.recipe import IMAGENET, Recipe
from pipelines.settings import NO_CAP

RESIZES = ("letterbox_corner", "pad_resize_corner", "letterbox", "stretch")
PADS = (0, 127, 128, 114)
RESAMPLING = (("opencv", "cubic"), ("opencv", "linear"), ("pil", "linear"), ("torch", "linear"),
              ("torch_antialias", "linear"), ("opencv", "area"), ("opencv", "nearest"))
IOUS = (0.45, 0.5, 0.6, 0.65, 0.7)
DEEPEST = 3  # changes combined at most: BGR, corner padding and pad 0 together is a common application's
SCORE_SLACK = 0.01  # the cut stands this far below the application's lowest score: its scores are rounded
ROUND_CUTS = (0.001, 0.01, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Change:
    """One step of the recipe changed: the preprocess keys it sets, and the step it is of (changes to one step
    never combine)."""

    step: str
    keys: tuple[tuple[str, Any], ...]

    def words(self) -> str:
        return ", ".join(f"preprocess.{key}={flag_value(value)}" for key, value in self.keys)


def flag_value(value: Any) -> str:
    """A value as --set reads it back (YAML), without spaces."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(flag_value(item) for item in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


def single_changes(base: Recipe, normalised_outside: bool = True) -> list[Change]:
    """Every one-step change to `base`, the most common first. `normalised_outside`: the graph takes float
    values the application normalised (a graph taking uint8 normalises itself: no normalisation to try)."""
    changes = [Change("channels", (("channels", "bgr" if base.channels == "rgb" else "rgb"),))]
    changes += [Change("resize", (("resize", resize),)) for resize in RESIZES if resize != base.resize]
    changes += [Change("pad", (("pad_value", pad),)) for pad in PADS[:1] if pad != base.pad_value]
    if normalised_outside:
        plain = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
        for scale, (mean, std) in ((255.0, plain), (255.0, IMAGENET), (base.scale, (base.mean[::-1], base.std[::-1])),
                                   (1.0, plain)):
            if (scale, tuple(mean), tuple(std)) != (base.scale, base.mean, base.std):
                changes.append(Change("normalisation", (("scale", scale), ("mean", tuple(mean)), ("std", tuple(std)))))
    changes += [Change("resampling", (("resampler", resampler), ("interpolation", interpolation)))
                for resampler, interpolation in RESAMPLING if (resampler, interpolation) !=
                (base.resampler, base.interpolation)]
    changes += [Change("pad", (("pad_value", pad),)) for pad in PADS[1:] if pad != base.pad_value]
    return _distinct(changes)


def _distinct(changes: Iterable[Change]) -> list[Change]:
    seen, kept = set(), []
    for change in changes:
        if change.keys not in seen:
            seen.add(change.keys)
            kept.append(change)
    return kept


def applied(base: Recipe, changes: Sequence[Change]) -> Recipe:
    return base.with_keys({key: value for change in changes for key, value in change.keys})


def effect(recipe: Recipe) -> tuple:
    """What a recipe does to the pixels: two that differ only in a step their resize never uses are one."""
    if recipe.resize == "stretch":
        recipe = replace(recipe, pad_value=0, inset=0)
    elif recipe.resize != "letterbox":
        recipe = replace(recipe, inset=0)
    return tuple(getattr(recipe, field.name) for field in fields(recipe))


def extended(best: tuple[Change, ...], ranked: Sequence[Change]) -> list[tuple[Change, ...]]:
    """The best recipe of one depth with one more single change to a step it leaves as it is, the singles that
    matched best alone first (`ranked`)."""
    steps = {change.step for change in best}
    return [(*best, change) for change in ranked if change.step not in steps]


def distinct_effects(base: Recipe, combos: Iterable[tuple[Change, ...]], seen: set) -> Iterator[tuple[Change, ...]]:
    """The combinations whose effect on the pixels is new (`seen` holds the effects tried, and grows)."""
    for combo in combos:
        key = effect(applied(base, combo))
        if key not in seen:
            seen.add(key)
            yield combo


@dataclass(frozen=True)
class Decode:
    """One postprocessing tried: the keys it sets beside the config's (postprocess.*)."""

    keys: tuple[tuple[str, Any], ...]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.keys)


def decodes(nms: bool, iou: float, agnostic: bool, max_det: int, cut: float, most_per_image: int) -> list[Decode]:
    """Every postprocessing to try, the config's own first: NMS's IoU and class-agnostic or not where NMS
    follows, no cap where the application kept as many per image as the cap, at the cut `cut`."""
    caps = [max_det] + ([NO_CAP] if max_det != NO_CAP and most_per_image >= max_det else [])
    if not nms:
        return [Decode((("conf_thres", cut), ("max_det", cap))) for cap in caps]
    ious = list(dict.fromkeys((iou, *IOUS)))
    return [Decode((("conf_thres", cut), ("iou_thres", value), ("agnostic", flag), ("max_det", cap)))
            for flag in (agnostic, not agnostic) for value in ious for cap in caps]


def cut_below(lowest: float) -> float:
    return max(0.0, round(lowest - SCORE_SLACK, 6))


def round_cuts(lowest: float) -> list[float]:
    """Cuts a deployment is likely to have been written with, that keep the application's every score, highest
    first."""
    return [cut for cut in reversed(ROUND_CUTS) if cut < lowest]
