"""DETR-style exports with two outputs, as RF-DETR and LW-DETR write them (`dets`, `labels`): boxes (B, Q, 4) of
cx, cy, w, h normalised to the input and class logits (B, Q, C); scores are the logits' sigmoid, and the best
(query, class) pairs are kept, so a query may stand under several classes (RF-DETR's top 300). A head trained on
COCO has 91 slots indexed by COCO's category ids (slot 0 and the ten unused ids never name a class); another
has one slot per class, or one more for the background, which is never a detection."""
from __future__ import annotations

from dataclasses import replace

import torch

from pipelines.exported.decoding import PAD_SCORE, normalised_cxcywh_to_xyxy, top_pairs
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import (COCO_IDS, Misfit, Reading, QUERY_LIMIT, SIGNED, fixed, named,
                                                 only_the_image)
from pipelines.exported.recipe import YOLO

SUMMARY = ("RF-DETR, LW-DETR", "(B, Q, 4) and (B, Q, C)", "cx, cy, w, h normalised; class logits (sigmoid)",
           "the top 300 (query, class) pairs, then the score cut",
           "two outputs, one of them (B, Q, 4); outputs named `dets`/`labels` (rfdetr)")
RECIPE = replace(YOLO, resize="stretch", resampler="torch", mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
NMS = False
BOXES = "input"
TOP = 300  # RF-DETR's num_select
COCO_SLOTS = 91


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 2 or any(len(t.shape) != 3 for t in outputs):
        return Misfit("it has one input and two outputs, boxes (B, Q, 4) and class logits (B, Q, C)")
    by_name = named(file, "dets", "labels")
    boxes = by_name[0] if by_name else next((i for i, t in enumerate(outputs) if fixed(t.shape[-1]) == 4), None)
    if boxes is None or named(file, "logits", "pred_boxes"):
        return Misfit("neither output is (B, Q, 4) boxes beside RF-DETR's logits (Hugging Face's are hf_detr)")
    slots = fixed(outputs[1 - boxes].shape[-1])
    queries = fixed(outputs[boxes].shape[1])
    if slots is None or (queries is not None and queries > QUERY_LIMIT):
        return Misfit(f"its logits hold a fixed number of classes over at most {QUERY_LIMIT} queries")
    names = file.names()
    class_ids, classes = None, slots
    if names is None and slots == COCO_SLOTS:
        class_ids = [COCO_IDS.index(slot) if slot in COCO_IDS else -1 for slot in range(slots)]
        classes = len(COCO_IDS)
    elif names is not None and slots == len(names) + 1:
        class_ids, classes = list(range(len(names))) + [-1], len(names)  # the last slot: background
    elif names is not None and slots != len(names):
        return Misfit(f"its metadata names {len(names)} classes, and its logits hold {slots}")
    why = ("outputs dets and labels (RF-DETR)" if by_name else "two outputs: boxes (B, Q, 4) and class logits")
    slots_said = {None: "", COCO_SLOTS: "; 91 slots by COCO category id"}.get(None if class_ids is None else slots,
                                                                              "; the last slot is the background")
    return Reading("detr", classes, why + slots_said, SIGNED, roles={"boxes": boxes, "logits": 1 - boxes},
                   class_ids=class_ids)


def raw(outputs, reading: Reading, height: int, width: int):
    boxes = normalised_cxcywh_to_xyxy(outputs[reading.roles["boxes"]].float(), height, width)
    found = top_pairs(boxes, outputs[reading.roles["logits"]].float().sigmoid(), TOP)
    if reading.class_ids is not None:
        mapped = torch.as_tensor(reading.class_ids, dtype=torch.float32)[found[..., 5].long()]
        found[..., 4] = torch.where(mapped < 0, torch.full_like(mapped, PAD_SCORE), found[..., 4])
        found[..., 5] = mapped.clamp(min=0)
    return found
