"""End-to-end YOLO heads (YOLOv10, YOLO26) and Ultralytics' `nms=True` exports: one (B, K, 6) output of x1, y1,
x2, y2 in input pixels, score and class; the graph has already kept one box per object. Ultralytics' RT-DETR
writes the same shape with another meaning (rtdetr_e2e): the metadata tells them apart, and where it says
nothing both readings are named."""
from __future__ import annotations

from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import ASSUMED, Misfit, Reading, fixed, only_the_image
from pipelines.exported.recipe import YOLO

SUMMARY = ("YOLOv10, YOLO26 end-to-end, Ultralytics `nms=True`", "(B, K, 6)",
           "x1, y1, x2, y2 in input pixels, score, class", "the score cut only",
           "metadata `end2end` or `nms` true (Ultralytics)")
RECIPE = YOLO
RECIPE_OF = "Ultralytics"  # the recipe of its predict; its metadata's author names it
NMS = False
BOXES = "input"


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 1 or len(outputs[0].shape) != 3 or fixed(outputs[0].shape[2]) != 6:
        return Misfit("it has one input and one (B, K, 6) output")
    classes = len(file.names() or [])
    if file.metadata_flag("nms") or file.metadata_flag("end2end"):
        return Reading("end2end", classes, "metadata: NMS in the graph (nms or end2end), output (B, K, 6)")
    return Reading("end2end", classes, "output (B, K, 6) read as x1, y1, x2, y2 in input pixels, score, class",
                   ASSUMED)


def raw(outputs, reading: Reading, height: int, width: int):
    return outputs[0].float()
