"""YOLOv5 and YOLOv7 exports (and any anchor-based YOLO that decodes in the graph): one (B, N, 5 + C) output of
cx, cy, w, h in input pixels, objectness and class scores; NMS follows. Told apart by its 5 + C values against the
metadata's names, or by rows too many for a DETR's queries; an ONNX graph that does no arithmetic after its last
convolutions decodes nothing, so its rows are not YOLOv5's (YOLOX's undecoded rows are)."""
from __future__ import annotations

from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import (ASSUMED, POSSIBLE, QUERY_LIMIT, Misfit, Reading, fixed,
                                                 names_fit, only_the_image)
from pipelines.exported.recipe import YOLO

SUMMARY = ("YOLOv5, YOLOv7", "(B, N, 5 + C)", "cx, cy, w, h in input pixels, objectness, class scores", "NMS",
           "5 + C values with the metadata's names; else rows beyond a DETR's queries (assumed), where an ONNX graph "
           "does arithmetic after its last convolutions (its decode)")
RECIPE = YOLO
RECIPE_OF = "Ultralytics"  # the recipe of its predict; its metadata's author names it
NMS = True
BOXES = "input"


def read(file: ExportedFile):
    if not only_the_image(file) or len(file.outputs) != 1 or len(file.outputs[0].shape) != 3:
        return Misfit("it has one input and one (B, N, 5 + C) output")
    _, count, values = file.outputs[0].shape
    if fixed(values) is None or values < 6 or (fixed(count) is not None and count < values):
        return Misfit(f"its rows hold 5 + C values, {values} here")
    classes = values - 5
    if not names_fit(file, classes):
        return Misfit(f"its metadata names {len(file.names())} classes, and 5 + C values leave {classes}")
    if file.names() is not None:
        return Reading("yolov5", classes, f"output (B, N, 5 + C) with the metadata's {classes} names")
    if file.after_convolutions is not None and not file.after_convolutions.decodes:  # YOLOv5 and YOLOv7 decode boxes in their graph
        return Reading("yolov5", classes, "output (B, N, 5 + C), but no arithmetic after the graph's last "
                       "convolutions, where YOLOv5 decodes its boxes", POSSIBLE)
    if fixed(count) is not None and count > QUERY_LIMIT:
        return Reading("yolov5", classes, f"output (B, N, 5 + C) assumed: {count} rows are anchors, not queries",
                       ASSUMED)
    return Reading("yolov5", classes, "output (B, N, 5 + C) assumed", ASSUMED)


def raw(outputs, reading: Reading, height: int, width: int):
    return outputs[0].float()
