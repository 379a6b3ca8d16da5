"""PP-PicoDet exported without its post-process (`export.post_process=False`), through paddle2onnx: one input
`image`, then per stride its class scores (1, N_s, C), sigmoid already applied, and after all of them its box
distributions (1, N_s, 4 (reg_max + 1)) over left, top, right, bottom (reg_max 7: 32 values). Decoded as
PaddleDetection's PicoDet post-process does: a softmax over each side's bins, their expected bin times the
stride, from the cell's centre (cell + 0.5) x stride (its configs' cell_offset 0.5); NMS follows, class by class.

The strides are infer_cfg.yml's `fpn_stride` where it is beside the file, else the ones whose grids give each
output's rows at a static input, else 8, 16, 32, 64 by assumption; the recipe is infer_cfg.yml's, else PicoDet's
own (each axis to the input, OpenCV cubic on the 8-bit RGB image, / 255, ImageNet mean and std), said as assumed."""
from __future__ import annotations

from dataclasses import replace

import torch

from pipelines.boxes.conversions import xyxy_to_xywh
from pipelines.exported.decoding import distances_to_xyxy, distribution_distances, grid_points, with_objectness
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import SIGNED, Misfit, Reading, anchor_count, fixed, names_fit, only_the_image
from pipelines.exported.paddle_sidecar import read_infer_config
from pipelines.exported.recipe import YOLO

SUMMARY = ("PP-PicoDet through paddle2onnx, `post_process=False`", "per stride (1, N, C), then per stride "
           "(1, N, 4 (reg_max + 1))", "class scores (sigmoid applied); DFL distances from cell centres (+ 0.5)",
           "decode, then NMS", "2 x 3 to 5 outputs, scores before distributions, rows pairing up; one input; "
           "strides and recipe from `infer_cfg.yml`")
RECIPE = replace(YOLO, resize="stretch", interpolation="cubic", mean=(0.485, 0.456, 0.406),
                 std=(0.229, 0.224, 0.225))  # configs/picodet: Resize interp 2, keep_ratio False; NormalizeImage
NMS = True
MULTI_LABEL = True  # PaddleDetection's MultiClassNMS: class by class
BOXES = "input"
STRIDES = (8, 16, 32, 64)  # PicoDet's fpn_stride (the LCNet models); the first three for three heads
# infer_cfg.yml's NMS as its exporter writes it for PicoDet (score 0.3, IoU 0.5, 100 kept).
DEPLOYED = {"conf_thres": 0.3, "iou_thres": 0.5, "max_det": 100}


def read(file: ExportedFile):
    outputs = file.outputs
    heads = len(outputs) // 2
    if not only_the_image(file) or len(outputs) % 2 or not 3 <= heads <= 5 or any(len(t.shape) != 3 for t in outputs):
        return Misfit("it has one input and, per stride, class scores (1, N, C) then box distributions "
                      "(1, N, 4 (reg_max + 1)): 6 to 10 outputs")
    scores, boxes = outputs[:heads], outputs[heads:]
    classes, values = fixed(scores[0].shape[2]), fixed(boxes[0].shape[2])
    if (classes is None or values is None or values % 4 or any(fixed(t.shape[2]) != classes for t in scores)
            or any(fixed(t.shape[2]) != values for t in boxes)
            or any(fixed(s.shape[1]) != fixed(b.shape[1]) for s, b in zip(scores, boxes))):
        return Misfit("its score outputs share C classes, its distributions 4 (reg_max + 1) values, and each "
                      "stride's two outputs the same rows")
    if not names_fit(file, classes):
        return Misfit(f"its metadata names {len(file.names())} classes, and its scores hold {classes}")
    sidecar = read_infer_config(file, RECIPE)
    strides, said_strides = _strides(file, [fixed(t.shape[1]) for t in scores], sidecar)
    if isinstance(strides, Misfit):
        return strides
    said = sidecar.said() if sidecar else "recipe PicoDet's (assumed: no infer_cfg.yml beside the file)"
    return Reading("picodet", classes, f"{heads} strides of scores and DFL distributions ({said_strides}); {said}",
                   SIGNED, details={"strides": strides, "bins": values // 4},
                   recipe=sidecar.recipe if sidecar else None,
                   recipe_from=sidecar.path.name if sidecar else "")


def _strides(file: ExportedFile, rows: list, sidecar):
    height, width = (fixed(side) for side in file.image_input.shape[2:])
    if sidecar is not None and sidecar.strides is not None:
        strides, said = sidecar.strides, f"strides {list(sidecar.strides)} from {sidecar.path.name}"
        if len(strides) != len(rows):
            return Misfit(f"{sidecar.path.name} names {len(strides)} strides for {len(rows)} heads"), ""
    elif height is not None and width is not None and None not in rows:
        fitting = [next((s for s in (4, 8, 16, 32, 64, 128) if anchor_count(height, width, (s,)) == n), None)
                   for n in rows]
        if None in fitting:
            return Misfit(f"rows {rows} are not the cells of any strides at {height}x{width}"), ""
        strides, said = tuple(fitting), f"strides {fitting} from the rows at {height}x{width}"
    else:
        strides, said = STRIDES[:len(rows)], f"strides {list(STRIDES[:len(rows)])} assumed"
    if height is not None and width is not None and None not in rows and \
            [anchor_count(height, width, (s,)) for s in strides] != rows:
        return Misfit(f"rows {rows} are not the cells of strides {list(strides)} at {height}x{width}"), ""
    return tuple(strides), said


def raw(outputs, reading: Reading, height: int, width: int):
    strides, bins = reading.details["strides"], reading.details["bins"]
    heads = len(strides)
    scores = torch.cat([output.float() for output in outputs[:heads]], dim=1)
    distributions = torch.cat([output.float() for output in outputs[heads:]], dim=1)
    cells, cell_strides = grid_points(height, width, strides, offset=0.5)
    centres = cells * cell_strides[:, None]
    distances = distribution_distances(distributions, bins) * cell_strides[:, None]
    return with_objectness(xyxy_to_xywh(distances_to_xyxy(centres, distances)), scores)
