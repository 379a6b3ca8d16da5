"""SSDs of the TF Object Detection API as TFLite files (export_tflite_graph, Frigate's default `cpu` model): the graph
ends in TFLite_Detection_PostProcess, whose four outputs are the boxes (B, K, 4) of ymin, xmin, ymax, xmax
normalised to the input, the classes (B, K) counted from 0 without the background, the scores (B, K) and the
count (B,): NMS is done. Rows past the count are left uninitialised by the kernel (NaN or leftovers), so they are
padding here. The outputs are told apart by which of the operator's outputs each graph output is, never by order
(TF2 exports write them in another).

A runtime without the operator (OpenVINO's TFLite frontend has no translator for it) runs the graph up to its two
computed inputs, the box encodings (B, A, 4) and the class scores (B, A, 1 + C); then the operator's decode and
NMS run here (detection_postprocess.py), with its own options from the file.

Class ids: a head of 90 classes is COCO's, numbered as the TF OD API's label map (mscoco_label_map: class k is
COCO category k + 1; Frigate's labelmap lists the same 90 slots); detbench reports COCO's 80 classes, so each is
mapped to its place among them, and the ten ids COCO left unused never name a class. Another count keeps its
numbers. The recipe is the TF OD API's SSD preprocessing: the image stretched to the input, RGB, (x / 127.5) - 1
for a float input; a uint8 input takes the 8-bit pixels as they are (its quantization maps them to the same range,
and Frigate and TFLite's examples feed them so)."""
from __future__ import annotations

from dataclasses import replace

import torch

from pipelines.exported.decoding import PAD_SCORE, rows
from pipelines.exported.detection_postprocess import PostprocessOptions, decode_centre_size, postprocess
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import COCO_IDS, SIGNED, Misfit, Reading, only_the_image
from pipelines.exported.recipe import YOLO

SUMMARY = ("TF Object Detection API SSDs as TFLite (export_tflite_graph; Frigate's `cpu` model)",
           "TFLite_Detection_PostProcess: boxes (B, K, 4), classes (B, K), scores (B, K), count (B,)",
           "ymin, xmin, ymax, xmax normalised; classes from 0 without the background (COCO: id - 1)",
           "the score cut only (where a runtime lacks the operator, its decode and NMS run here)",
           "the graph ends in TFLite_Detection_PostProcess")
RECIPE = replace(YOLO, resize="stretch", mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
NMS = False
BOXES = "input"
DEPLOYED = {"conf_thres": 0.4}  # Frigate's cpu detector keeps the rows scoring from 0.4 up
OPERATOR = "TFLite_Detection_PostProcess"
COCO_SLOTS = 90
ROLES = ("boxes", "classes", "scores", "count")  # the operator's outputs, in its order


def read(file: ExportedFile):
    tail = file.tail
    if tail is None or tail.operator != OPERATOR:
        return Misfit(f"its graph ends in {OPERATOR}")
    if not only_the_image(file) or len(file.outputs) != 4:
        return Misfit(f"it has one input and the four outputs of {OPERATOR}")
    names = [tensor.name for tensor in file.outputs]
    slots = [names.index(name) if name in names else None for name in tail.outputs]
    if len(slots) != 4 or None in slots:
        return Misfit(f"its four outputs are the outputs of {OPERATOR}")
    options = PostprocessOptions.read(tail.options)
    class_ids, classes = None, options.num_classes
    if options.num_classes == COCO_SLOTS and file.names() is None:
        class_ids = [COCO_IDS.index(slot + 1) if slot + 1 in COCO_IDS else -1 for slot in range(COCO_SLOTS)]
        classes = len(COCO_IDS)
    said = "; 90 COCO classes as the TF OD API's label map numbers them" if class_ids else ""
    return Reading("tflite_ssd", classes, f"the graph ends in {OPERATOR} ({options.max_detections} rows){said}",
                   SIGNED, roles=dict(zip(ROLES, slots)), class_ids=class_ids,
                   details={"options": options, "anchors": next(iter(tail.constants.values()), None)})


def raw(outputs, reading: Reading, height: int, width: int):
    if len(outputs) == 4:
        found = _operator_rows(outputs, reading)
    else:
        found = _decoded_here(outputs, reading)
    boxes = found[..., [1, 0, 3, 2]] * found.new_tensor([width, height, width, height])
    scores, labels = found[..., 4], found[..., 5]
    if reading.class_ids is not None:
        mapped = torch.as_tensor(reading.class_ids, dtype=torch.float32)[labels.long().clamp(0, COCO_SLOTS - 1)]
        scores = torch.where(mapped < 0, torch.full_like(scores, PAD_SCORE), scores)
        labels = mapped.clamp(min=0)
    return rows(boxes, scores, labels)


def _operator_rows(outputs, reading: Reading) -> torch.Tensor:
    """(B, K, 6) ymin, xmin, ymax, xmax, score, class from the operator's outputs; rows past the count are padding."""
    roles = reading.roles
    boxes = outputs[roles["boxes"]].float()
    scores = outputs[roles["scores"]].float()
    labels = outputs[roles["classes"]].float()
    counts = outputs[roles["count"]].float().reshape(-1)
    valid = torch.arange(boxes.shape[1])[None] < counts.nan_to_num(0).long()[:, None]
    boxes = torch.where(valid[..., None], boxes, torch.zeros_like(boxes))
    scores = torch.where(valid, scores.nan_to_num(PAD_SCORE), torch.full_like(scores, PAD_SCORE))
    labels = torch.where(valid, labels.nan_to_num(0), torch.zeros_like(labels))
    return torch.cat((boxes, scores[..., None], labels[..., None]), dim=-1)


def _decoded_here(outputs, reading: Reading) -> torch.Tensor:
    """The operator's work on its two computed inputs (box encodings, class scores), image by image, padded to its
    max_detections rows."""
    options: PostprocessOptions = reading.details["options"]
    anchors = torch.as_tensor(reading.details["anchors"], dtype=torch.float32)
    encodings, class_scores = outputs[0].float(), outputs[1].float()
    found = torch.zeros((encodings.shape[0], options.max_detections, 6))
    found[..., 4] = PAD_SCORE
    for slot, image_encodings, image_scores in zip(found, encodings, class_scores):
        boxes, labels, scores = postprocess(decode_centre_size(image_encodings, anchors, options), image_scores,
                                            options)
        slot[:len(scores), :4], slot[:len(scores), 4], slot[:len(scores), 5] = boxes, scores, labels.float()
    return found
