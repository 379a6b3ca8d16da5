"""What a file run says of the recipe it applied: the preprocessing and the decode as run, on what ground (the
exporter's, read from its metadata or a sidecar; the layout's default; the config's keys), and the keys that
change it. Pure: the entry is plain data for summary.json `recipe` and the console (utils/record/sections.py
types it), from what the family already read."""
from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Iterable

from pipelines.exported.facts import static_size
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import Reading
from pipelines.exported.recipe import RECIPE_KEYS, Recipe
from pipelines.settings import NO_CAP

PREPROCESS_KEYS = (*RECIPE_KEYS, "mean", "std", "img_size")
CUT_KEYS = ("conf_thres", "max_det")
NMS_KEYS = ("iou_thres", "agnostic")
MATCH = "benchmark.py match --config C --against DETECTIONS finds your application's"


@dataclass(frozen=True)
class DecodeSettings:
    """What follows the graph, as the run's decode does it."""

    conf_thres: float
    iou_thres: float
    max_det: int
    agnostic: bool
    multi_label: bool
    clip: bool


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def keys_in_words(keys: Iterable[str]) -> str:
    """preprocess.a, preprocess.b, postprocess.c as preprocess.{a, b}, postprocess.c."""
    sections: dict[str, list[str]] = {}
    for key in keys:
        section, _, name = key.partition(".")
        sections.setdefault(section, []).append(name)
    return ", ".join(f"{section}.{names[0]}" if len(names) == 1 else f"{section}.{{{', '.join(names)}}}"
                     for section, names in sections.items())


def ground(exported: ExportedFile, layout: ModuleType, reading: Reading) -> str:
    """Whose recipe the layout's is, and how the run knows."""
    if reading.recipe is not None:
        return f"the exporter's, read from {reading.recipe_from or 'the files beside the file'}"
    own, author = getattr(layout, "RECIPE_OF", None), exported.metadata.get("author")
    if own is not None and author == own:
        return f"the exporter's: {possessive(own)} predict, read from its metadata (author {author})"
    default = f"the {reading.layout} layout's default" + (f", {possessive(own)} predict" if own else
                                                          ", its author's predict")
    return default + (" (the layout itself assumed)" if reading.assumed else "")


def said_recipe(exported: ExportedFile, layout: ModuleType, reading: Reading, recipe: Recipe,
                target: tuple[int, int], decode: DecodeSettings, yours: Iterable[str]) -> dict[str, Any]:
    """summary.json `recipe`. `yours`: the dotted keys the config set (preprocess.*, postprocess.*)."""
    nms = bool(layout.NMS)
    sized = static_size(exported) is None  # a static file's own size wins over img_size
    changing = [f"preprocess.{key}" for key in PREPROCESS_KEYS if key != "img_size" or sized]
    changing += [f"postprocess.{key}" for key in (*CUT_KEYS, *(NMS_KEYS if nms else ()))]
    yours = [key for key in changing if key in set(yours)]
    base = ground(exported, layout, reading)
    kept = "no cap" if decode.max_det == NO_CAP else f"at most {decode.max_det} kept"
    if nms:
        which = "class-agnostic" if decode.agnostic else ("every class above the cut" if decode.multi_label
                                                          else "class by class")
        follows = f"NMS {which} at IoU {decode.iou_thres:g}, cut {decode.conf_thres:g}, {kept}"
    else:
        follows = f"the file's own rows, cut {decode.conf_thres:g}, {kept}"
    edges = "clipped to the image" if decode.clip else "left beyond the image as they fall"
    said = f"{recipe.words()}; input {target[0]}x{target[1]}; {follows}; boxes {edges}"
    return {"layout": reading.layout, "ground": base, "yours": yours, "preprocess": {
        **recipe.describe(), "input_hw": list(target)}, "postprocess": {
        "nms": nms, "conf_thres": decode.conf_thres, "iou_thres": decode.iou_thres if nms else None,
        "max_det": decode.max_det, "agnostic": decode.agnostic if nms else None,
        "multi_label": decode.multi_label if nms else None, "clip": decode.clip},
        "keys": changing, "said": said, "change": f"change it with {keys_in_words(changing)}; {MATCH}"}
