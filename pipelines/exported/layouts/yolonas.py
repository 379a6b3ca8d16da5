"""YOLO-NAS as super-gradients exports it without NMS: two outputs, boxes (B, N, 4) of x1, y1, x2, y2 in input
pixels and class scores (B, N, C) with their sigmoid already applied; NMS follows, class by class. Its exporter
names them `pre_nms_bboxes_xyxy` and `pre_nms_scores` (N is then its 1000 best candidates); a graph exported
straight from the model has one row per cell of the stride 8, 16 and 32 grids instead, and unnamed outputs.

The recipe is super-gradients' for its COCO checkpoints (`default_yolo_nas_coco_processing_params`): the RGB image's
long side resized to 636 of the 640 input (OpenCV, linear, rounded), centred and padded grey 114 all round
(`inset` 2), divided by 255. A model trained on other data takes its validation set's transforms instead (often
the image at the top left: `preprocess.resize=letterbox_corner`, `preprocess.inset=0`)."""
from __future__ import annotations

from dataclasses import replace

from pipelines.boxes.conversions import xyxy_to_xywh
from pipelines.exported.decoding import with_objectness
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import (ASSUMED, NAMED, Misfit, Reading, anchor_count, fixed, named,
                                                 names_fit, only_the_image)
from pipelines.exported.recipe import YOLO

SUMMARY = ("YOLO-NAS (super-gradients `export`, no NMS)", "(B, N, 4) and (B, N, C)",
           "x1, y1, x2, y2 in input pixels; class scores (sigmoid applied)", "NMS, class by class",
           "outputs named `pre_nms_bboxes_xyxy`/`pre_nms_scores`; else N = cells of strides 8, 16, 32 (assumed)")
RECIPE = replace(YOLO, inset=2)  # 636 of 640, centred, grey 114, OpenCV linear, RGB / 255
NMS = True
MULTI_LABEL = True  # super-gradients' NMS: ONNX NonMaxSuppression per class; its predict's multi_label_per_box
BOXES = "input"
CLIP = False  # super-gradients' predict keeps boxes past the image as the graph gives them
STRIDES = (8, 16, 32)
NAMES = ("pre_nms_bboxes_xyxy", "pre_nms_scores")
DEPLOYED = {"conf_thres": 0.25, "iou_thres": 0.7}  # super-gradients' predict defaults for YOLO-NAS on COCO


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 2 or any(len(t.shape) != 3 for t in outputs):
        return Misfit("it has one input and two outputs, boxes (B, N, 4) and class scores (B, N, C)")
    roles = named(file, *NAMES)
    boxes, scores = roles if roles else (0, 1)
    rows, sides = outputs[boxes].shape[1:], outputs[scores].shape[1:]
    if fixed(rows[1]) != 4 or fixed(sides[1]) is None or (fixed(rows[0]) and fixed(sides[0]) != rows[0]):
        return Misfit("its first output is (B, N, 4) boxes and its second (B, N, C) scores over the same rows")
    classes = sides[1]
    if not names_fit(file, classes):
        return Misfit(f"its metadata names {len(file.names())} classes, and its scores hold {classes}")
    role_map = {"boxes": boxes, "scores": scores}
    if roles:
        return Reading("yolonas", classes, "outputs pre_nms_bboxes_xyxy and pre_nms_scores (super-gradients)", NAMED,
                       roles=role_map)
    height, width = (fixed(side) for side in file.image_input.shape[2:])
    if height is None or width is None or fixed(rows[0]) != anchor_count(height, width, STRIDES):
        return Misfit("its outputs are not named by super-gradients and its rows are not the cells of strides 8, "
                      "16 and 32 at a static input")
    return Reading("yolonas", classes, "two outputs (B, N, 4) and (B, N, C), N the cells of strides 8, 16, 32, "
                   "read as YOLO-NAS's corners and scores", ASSUMED, roles=role_map)


def raw(outputs, reading: Reading, height: int, width: int):
    boxes = outputs[reading.roles["boxes"]].float()
    return with_objectness(xyxy_to_xywh(boxes), outputs[reading.roles["scores"]].float())
