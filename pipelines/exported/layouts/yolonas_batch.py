"""YOLO-NAS as super-gradients exports it with NMS and preprocessing in the graph, in its "batch" format: four
outputs, `num_predictions` (B, 1), `pred_boxes` (B, K, 4) of x1, y1, x2, y2 in input pixels, `pred_scores` (B, K)
and `pred_classes` (B, K); each image's rows past its count are padding. The graph takes the letterboxed 8-bit RGB
image and normalises it itself. TF-style exports have four outputs too, but a count of shape (B,), not (B, 1)."""
from __future__ import annotations

import torch

from pipelines.exported.decoding import PAD_SCORE, rows
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import NAMED, SIGNED, Misfit, Reading, fixed, named_as_exported, only_the_image
from pipelines.exported.layouts.yolonas import RECIPE  # noqa: F401 (the same author's recipe)

SUMMARY = ("YOLO-NAS (super-gradients `export`, NMS inside, batch format)",
           "`num_predictions` (B, 1), `pred_boxes` (B, K, 4), `pred_scores` (B, K), `pred_classes` (B, K)",
           "x1, y1, x2, y2 in input pixels, score, class; rows past the count are padding", "the score cut only",
           "four outputs by those names; else their ranks, the count (B, 1)")
NMS = False  # RECIPE: yolonas's (the graph takes the uint8 pixels and divides by 255 itself)
BOXES = "input"
CLIP = False  # super-gradients' predict keeps boxes past the image as the graph gives them
NAMES = ("num_predictions", "pred_boxes", "pred_scores", "pred_classes")
CLASSES = 80  # its COCO models', where the file names none
DEPLOYED = {"conf_thres": 0.25}  # the graph's own cut came first (the exporter's confidence_threshold)


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 4:
        return Misfit("it has one input and four outputs: a count, boxes, scores and classes")
    roles = named_as_exported(file, NAMES)
    sure, why = NAMED, "outputs num_predictions, pred_boxes, pred_scores, pred_classes (super-gradients)"
    if roles is None:
        ranks = [len(t.shape) for t in outputs]
        if ranks != [2, 3, 2, 2]:
            return Misfit("its outputs are a (B, 1) count, (B, K, 4) boxes, (B, K) scores and (B, K) classes")
        roles, sure, why = [0, 1, 2, 3], SIGNED, "four outputs: a (B, 1) count, (B, K, 4) boxes, scores, classes"
    count, boxes = outputs[roles[0]], outputs[roles[1]]
    # The exporter leaves the boxes' last axis symbolic: 4 or unknown both fit.
    if (len(count.shape) != 2 or fixed(count.shape[1]) != 1 or len(boxes.shape) != 3
            or fixed(boxes.shape[2]) not in (4, None)):
        return Misfit(f"its count is (B, 1) and its boxes (B, K, 4), not {list(count.shape)} and "
                      f"{list(boxes.shape)}")
    names = file.names()
    return Reading("yolonas_batch", len(names) if names else CLASSES, why, sure,
                   roles=dict(zip(("count", "boxes", "scores", "classes"), roles)))


def raw(outputs, reading: Reading, height: int, width: int):
    found = rows(outputs[reading.roles["boxes"]], outputs[reading.roles["scores"]], outputs[reading.roles["classes"]])
    count = outputs[reading.roles["count"]].reshape(-1, 1).long()
    beyond = torch.arange(found.shape[1])[None, :] >= count
    found[..., 4] = torch.where(beyond, torch.full_like(found[..., 4], PAD_SCORE), found[..., 4])
    return found
