"""Hugging Face's DETR family as exported with its output names: `logits` (B, Q, C + 1), a no-object class last,
under softmax, and `pred_boxes` (B, Q, 4) cx, cy, w, h normalised; each query keeps its best real class."""
from __future__ import annotations

from dataclasses import replace

from pipelines.exported.decoding import best_class_rows, normalised_cxcywh_to_xyxy
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import Misfit, Reading, NAMED, fixed, named, names_fit
from pipelines.exported.recipe import YOLO

SUMMARY = ("Hugging Face DETR, Conditional/Deformable DETR", "`logits` (B, Q, C + 1), `pred_boxes` (B, Q, 4)",
           "cx, cy, w, h normalised; class logits (softmax, no-object last)",
           "each query its best real class, then the score cut", "outputs named `logits` and `pred_boxes`")
RECIPE = replace(YOLO, resize="stretch", resampler="pil", mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
NMS = False
BOXES = "input"


def read(file: ExportedFile):
    roles = named(file, "pred_boxes", "logits")
    if roles is None or len(file.inputs) > 2:
        return Misfit("its outputs are named logits and pred_boxes (Hugging Face's)")
    slots = fixed(file.outputs[roles[1]].shape[-1])
    if slots is None or slots < 2 or not names_fit(file, slots - 1):
        return Misfit("its logits hold C classes and the no-object class, C matching the metadata's names")
    return Reading("hf_detr", slots - 1, "outputs logits and pred_boxes (Hugging Face)", NAMED,
                   roles={"boxes": roles[0], "logits": roles[1]},
                   extra_inputs={name: "pixel_mask" for name in [t.name for t in file.inputs[1:]]})


def raw(outputs, reading: Reading, height: int, width: int):
    probabilities = outputs[reading.roles["logits"]].float().softmax(dim=-1)[..., :-1]
    return best_class_rows(normalised_cxcywh_to_xyxy(outputs[reading.roles["boxes"]].float(), height, width),
                           probabilities)
