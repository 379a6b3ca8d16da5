"""YOLOX as its own export tool writes it by default: one (B, A, 5 + C) output, undecoded, one row per cell of
the stride 8, 16 and 32 grids: cell offsets of the centre, log sizes (exp times the stride), then objectness and
class scores with their sigmoid already applied; NMS follows (its score is objectness x class), over every class at
once as YOLOX's demo does. The image is
resized by one ratio with OpenCV and padded 114 at the bottom right, BGR, 0-255, no normalisation."""
from __future__ import annotations

from dataclasses import replace

import torch

from pipelines.exported.decoding import grid_points
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import (ASSUMED, POSSIBLE, SIGNED, Misfit, Reading, anchor_count, fixed,
                                                 names_fit, only_the_image)
from pipelines.exported.recipe import YOLO
from pipelines.settings import NO_CAP

SUMMARY = ("YOLOX (its export tool; `decode_in_inference` off)", "(B, A, 5 + C), one row per grid cell",
           "cell offsets and log sizes (undecoded), objectness, class scores", "decode, then NMS, class-agnostic",
           "rows = cells of strides 8, 16, 32 at the static input, and an ONNX graph doing no arithmetic after its "
           "last convolutions; else by `model.head`")
RECIPE = replace(YOLO, resize="letterbox_corner", channels="bgr", scale=1.0)
NMS = True
AGNOSTIC = True  # YOLOX's demo: multiclass_nms(..., class_agnostic=True), one NMS over every class
BOXES = "input"
CLIP = False  # the demo divides boxes by the ratio and never clips them to the image
STRIDES = (8, 16, 32)
# YOLOX's demo: conf 0.3, IoU 0.45, and no cap on the boxes kept (its postprocess keeps all NMS leaves).
DEPLOYED = {"conf_thres": 0.3, "iou_thres": 0.45, "max_det": NO_CAP}


CELLS = "output (B, A, 5 + C) of one row per cell of strides 8, 16, 32"


def rows_of_cells(file: ExportedFile) -> Misfit | tuple[int, bool]:
    """The classes of a (B, A, 5 + C) output, and whether its rows are known to be the cells of strides 8, 16 and
    32 (a static input); a Misfit where they cannot be."""
    if not only_the_image(file) or len(file.outputs) != 1 or len(file.outputs[0].shape) != 3:
        return Misfit("it has one input and one (B, A, 5 + C) output")
    _, count, values = file.outputs[0].shape
    height, width = (fixed(side) for side in file.image_input.shape[2:])
    if fixed(values) is None or values < 6 or not names_fit(file, values - 5):
        return Misfit(f"its rows hold 5 + C values matching the metadata's names; {values} here")
    if height is None or width is None or fixed(count) is None:
        return values - 5, False
    if count != anchor_count(height, width, STRIDES):
        return Misfit(f"{count} rows are not the {anchor_count(height, width, STRIDES)} cells of strides 8, 16 "
                      f"and 32 at {height}x{width}")
    return values - 5, True


def read(file: ExportedFile):
    found = rows_of_cells(file)
    if isinstance(found, Misfit):
        return found
    classes, on_cells = found
    if not on_cells:
        return Reading("yolox", classes, "output (B, A, 5 + C) read as YOLOX's undecoded rows", POSSIBLE)
    if file.after_convolutions is not None and not file.after_convolutions.decodes:
        return Reading("yolox", classes, f"{CELLS}, and no arithmetic after the graph's last convolutions: YOLOX's "
                       "undecoded rows", SIGNED)
    if file.after_convolutions is not None:  # decoded in the graph: YOLOX's decoded rows (yolox_decoded) or another YOLO's
        return Reading("yolox", classes, f"{CELLS}, decoded in the graph", POSSIBLE)
    return Reading("yolox", classes, f"{CELLS}, read as YOLOX's undecoded rows", ASSUMED)


def raw(outputs, reading: Reading, height: int, width: int):
    values = outputs[0].float()
    cells, strides = grid_points(height, width, STRIDES, offset=0.0)
    centres = (values[..., :2] + cells) * strides[:, None]
    sizes = values[..., 2:4].exp() * strides[:, None]
    return torch.cat((centres, sizes, values[..., 4:]), dim=-1)
