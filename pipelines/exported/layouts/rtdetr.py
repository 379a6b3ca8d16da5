"""RT-DETR as Ultralytics exported it before 8.4: one (B, Q, 4 + C) output of cx, cy, w, h normalised to the input
and class scores (sigmoid already applied), one box per query; each query keeps its best class. The image is
stretched to the input."""
from __future__ import annotations

from dataclasses import replace

from pipelines.exported.decoding import best_class_rows, normalised_cxcywh_to_xyxy
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import (ASSUMED, QUERY_LIMIT, Misfit, Reading, fixed, names_fit,
                                                 only_the_image)
from pipelines.exported.recipe import YOLO

SUMMARY = ("RT-DETR, Ultralytics before 8.4", "(B, Q, 4 + C)", "cx, cy, w, h normalised, class scores",
           "the score cut only, each query its best class", "4 + C values with the metadata's names, Q at most 1000")
RECIPE = replace(YOLO, resize="stretch")
RECIPE_OF = "Ultralytics"  # the recipe of its predict; its metadata's author names it
NMS = False
BOXES = "input"
CLIP = False  # Ultralytics' RT-DETR predict scales the boxes to the image and never clips them


def read(file: ExportedFile):
    if not only_the_image(file) or len(file.outputs) != 1 or len(file.outputs[0].shape) != 3:
        return Misfit("it has one input and one (B, Q, 4 + C) output")
    _, queries, values = file.outputs[0].shape
    if fixed(values) is None or values < 5 or (fixed(queries) is not None and queries > QUERY_LIMIT):
        return Misfit(f"its at most {QUERY_LIMIT} queries hold 4 + C values; {queries} by {values} here")
    classes = values - 4
    if not names_fit(file, classes):
        return Misfit(f"its metadata names {len(file.names())} classes, and 4 + C values leave {classes}")
    if file.names() is not None:
        return Reading("rtdetr", classes, f"output (B, Q, 4 + C) with the metadata's {classes} names")
    return Reading("rtdetr", classes, "output (B, Q, 4 + C) assumed", ASSUMED)


def raw(outputs, reading: Reading, height: int, width: int):
    values = outputs[0].float()
    return best_class_rows(normalised_cxcywh_to_xyxy(values[..., :4], height, width), values[..., 4:])
