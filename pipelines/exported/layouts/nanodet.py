"""NanoDet-Plus as its own tools/export_onnx.py writes it: input `data`, one output `output` (B, A, C + 4 (reg_max
+ 1)), one row per cell of the stride 8, 16, 32 and 64 grids: class scores with their sigmoid applied, then each
side's distribution (left, top, right, bottom; reg_max 7: 32 values) still to softmax. Decoded as its head's
get_bboxes does: the expected bin times the stride, from the cell's corner (cell x stride, no half-cell offset),
clipped to the input; NMS follows, class by class.

The image is stretched to the input (keep_ratio False in its configs), BGR, normalised in 0-255 by its configs'
mean [103.53, 116.28, 123.675] and std [57.375, 57.12, 58.395] (B, G, R). Its predictor resizes with
cv2.warpPerspective, which samples corner-aligned where cv2.resize samples pixel centres: detbench resizes with
cv2.resize, a shift under half a source pixel."""
from __future__ import annotations

from dataclasses import replace

import torch

from pipelines.boxes.conversions import xyxy_to_xywh
from pipelines.exported.decoding import distances_to_xyxy, distribution_distances, grid_points, with_objectness
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import (ASSUMED, SIGNED, Misfit, Reading, anchor_count, fixed, names_fit,
                                                 only_the_image)
from pipelines.exported.recipe import YOLO

SUMMARY = ("NanoDet-Plus (its tools/export_onnx.py)", "(B, A, C + 4 (reg_max + 1)), one row per grid cell",
           "class scores (sigmoid applied), then DFL distributions from cell corners", "decode, then NMS",
           "input `data`, output `output`, rows = cells of strides 8, 16, 32, 64 at the static input")
# Its configs' normalize, given here as R, G, B (the recipe's order): the BGR lists reversed.
RECIPE = replace(YOLO, resize="stretch", channels="bgr", scale=1.0, mean=(123.675, 116.28, 103.53),
                 std=(58.395, 57.12, 57.375))
NMS = True
MULTI_LABEL = True  # its head's multiclass_nms: class by class
BOXES = "input"
STRIDES = (8, 16, 32, 64)
BINS = 8  # reg_max 7
DEPLOYED = {"conf_thres": 0.35, "iou_thres": 0.6, "max_det": 100}  # its demo's cut; its head's NMS IoU and cap


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 1 or len(outputs[0].shape) != 3:
        return Misfit("it has one input and one (B, A, C + 32) output")
    _, count, values = outputs[0].shape
    height, width = (fixed(side) for side in file.image_input.shape[2:])
    if fixed(values) is None or values <= 4 * BINS or not names_fit(file, values - 4 * BINS):
        return Misfit(f"its rows hold C + 32 values matching the metadata's names; {values} here")
    if height is None or width is None or fixed(count) != anchor_count(height, width, STRIDES):
        return Misfit("its rows are not the cells of strides 8, 16, 32 and 64 at a static input")
    classes = values - 4 * BINS
    if file.image_input.name == "data" and outputs[0].name == "output":
        return Reading("nanodet", classes, "input data, output output (NanoDet's export), rows = cells of strides "
                       "8, 16, 32, 64", SIGNED)
    return Reading("nanodet", classes, "rows = cells of strides 8, 16, 32, 64, read as NanoDet-Plus's scores and "
                   "DFL distributions", ASSUMED)


def raw(outputs, reading: Reading, height: int, width: int):
    values = outputs[0].float()
    classes = reading.classes
    cells, strides = grid_points(height, width, STRIDES, offset=0.0)
    distances = distribution_distances(values[..., classes:], BINS) * strides[:, None]
    corners = distances_to_xyxy(cells * strides[:, None], distances)
    limits = corners.new_tensor([width, height, width, height])
    corners = torch.minimum(corners.clamp(min=0), limits)
    return with_objectness(xyxy_to_xywh(corners), values[..., :classes])
