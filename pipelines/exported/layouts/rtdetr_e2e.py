"""RT-DETR as Ultralytics 8.4 exports it: one (B, 300, 6) output of cx, cy, w, h normalised to the input, score
and class, the top queries already chosen; the image stretched to the input (no letterbox). The same shape as an
end-to-end YOLO head's (end2end, whose boxes are corners in pixels): Ultralytics' metadata says which."""
from __future__ import annotations

from dataclasses import replace

from pipelines.exported.decoding import normalised_cxcywh_to_xyxy, rows
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import ASSUMED, NAMED, Misfit, Reading, fixed, only_the_image
from pipelines.exported.recipe import YOLO

SUMMARY = ("RT-DETR, Ultralytics 8.4 and later", "(B, 300, 6)", "cx, cy, w, h normalised, score, class",
           "the score cut only", "metadata naming RT-DETR (its head, description or model)")
RECIPE = replace(YOLO, resize="stretch")
RECIPE_OF = "Ultralytics"  # the recipe of its predict; its metadata's author names it
NMS = False
BOXES = "input"
CLIP = False  # Ultralytics' RT-DETR predict scales the boxes to the image and never clips them
MARKS = ("rtdetr", "rt-detr")


def six_columns(file: ExportedFile) -> bool:
    return len(file.outputs) == 1 and len(file.outputs[0].shape) == 3 and fixed(file.outputs[0].shape[2]) == 6


def written_for_rtdetr(file: ExportedFile) -> bool:
    """Whether the exporter's metadata names an RT-DETR (its head's class, its description, its model file)."""
    said = [file.metadata.get(key) for key in ("head", "description", "model")]
    args = file.metadata.get("args")
    if isinstance(args, dict):
        said.append(args.get("model"))
    return any(mark in str(value).lower() for value in said if value for mark in MARKS)


def read(file: ExportedFile):
    if not only_the_image(file) or not six_columns(file):
        return Misfit("it has one input and one (B, K, 6) output")
    classes = len(file.names() or [])
    if written_for_rtdetr(file):
        return Reading("rtdetr_e2e", classes, "metadata names RT-DETR; output (B, K, 6) of normalised centres",
                       NAMED)
    return Reading("rtdetr_e2e", classes, "output (B, K, 6) read as normalised cx, cy, w, h, score, class",
                   ASSUMED)


def raw(outputs, reading: Reading, height: int, width: int):
    values = outputs[0].float()
    return rows(normalised_cxcywh_to_xyxy(values[..., :4], height, width), values[..., 4], values[..., 5])
