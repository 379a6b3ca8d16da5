"""TFLite_Detection_PostProcess's work, for a runtime that has no kernel for it (OpenVINO's TFLite frontend): the
TF Object Detection API's centre-size box decode against the anchors, then the operator's own non-maximum
suppression (its fast one, class-agnostic over each anchor's best classes, or its regular one, class by class),
as TFLite's kernel (detection_postprocess.cc) does. Pure functions on tensors, tested against hand-computed
cases and against LiteRT's own kernel."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import torch

from pipelines.exported.mediapipe_ssd import iou_with


@dataclass(frozen=True)
class PostprocessOptions:
    """The operator's options, as TF's converter writes them into the file (a flexbuffer map)."""

    max_detections: int
    max_classes_per_detection: int = 1
    detections_per_class: int = 100
    use_regular_nms: bool = False
    nms_score_threshold: float = 0.0
    nms_iou_threshold: float = 0.6
    num_classes: int = 90
    y_scale: float = 10.0
    x_scale: float = 10.0
    h_scale: float = 5.0
    w_scale: float = 5.0

    @classmethod
    def read(cls, options: Mapping[str, Any]) -> "PostprocessOptions":
        known = {key: options[key] for key in cls.__dataclass_fields__ if key in options}
        return cls(**known)


def decode_centre_size(encodings: torch.Tensor, anchors: torch.Tensor, options: PostprocessOptions) -> torch.Tensor:
    """(..., A, 4) encodings ty, tx, th, tw and (A, 4) anchors y centre, x centre, h, w -> (..., A, 4) ymin, xmin,
    ymax, xmax, normalised as the anchors are."""
    ay, ax, ah, aw = anchors.unbind(-1)
    y = encodings[..., 0] / options.y_scale * ah + ay
    x = encodings[..., 1] / options.x_scale * aw + ax
    half_h = 0.5 * torch.exp(encodings[..., 2] / options.h_scale) * ah
    half_w = 0.5 * torch.exp(encodings[..., 3] / options.w_scale) * aw
    return torch.stack((y - half_h, x - half_w, y + half_h, x + half_w), dim=-1)


def _as_xyxy(boxes_yxyx: torch.Tensor) -> torch.Tensor:
    return boxes_yxyx[:, [1, 0, 3, 2]]


def _greedy(boxes_yxyx: torch.Tensor, scores: torch.Tensor, threshold: float, iou: float, limit: int) -> torch.Tensor:
    """Indices kept by one greedy NMS: candidates scoring at least `threshold`, best first, each dropping the later
    ones it overlaps above `iou`, at most `limit`."""
    candidates = torch.nonzero(scores >= threshold).flatten()
    order = candidates[torch.sort(scores[candidates], descending=True, stable=True).indices]
    corners = _as_xyxy(boxes_yxyx)
    kept: list[int] = []
    alive = torch.ones(len(order), dtype=torch.bool)
    for position in range(len(order)):
        if len(kept) >= limit:
            break
        if not alive[position]:
            continue
        index = order[position]
        kept.append(int(index))
        later = order[position + 1:]
        alive[position + 1:] &= ~(iou_with(corners[index], corners[later]) > iou)
    return torch.tensor(kept, dtype=torch.long)


def postprocess(boxes_yxyx: torch.Tensor, class_scores: torch.Tensor, options: PostprocessOptions,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One image's decoded boxes (A, 4) and scores (A, 1 + C) (column 0 the background, never a detection) -> the
    operator's detections: boxes (K, 4) ymin, xmin, ymax, xmax, classes (K,) counted from 0 without the
    background, scores (K,), best first, K at most max_detections."""
    scores = class_scores[:, 1:1 + options.num_classes]
    if options.use_regular_nms:
        found_boxes, found_classes, found_scores = [], [], []
        for label in range(scores.shape[1]):
            kept = _greedy(boxes_yxyx, scores[:, label], options.nms_score_threshold, options.nms_iou_threshold,
                           options.detections_per_class)
            found_boxes.append(kept)
            found_classes.append(torch.full((len(kept),), label, dtype=torch.long))
            found_scores.append(scores[kept, label])
        anchors, labels, values = torch.cat(found_boxes), torch.cat(found_classes), torch.cat(found_scores)
        best = torch.sort(values, descending=True, stable=True).indices[:options.max_detections]
        return boxes_yxyx[anchors[best]], labels[best], values[best]
    per_anchor = min(options.max_classes_per_detection, scores.shape[1])
    top_scores, top_labels = scores.topk(per_anchor, dim=1)
    kept = _greedy(boxes_yxyx, top_scores[:, 0], options.nms_score_threshold, options.nms_iou_threshold,
                   options.max_detections)
    anchors = kept.repeat_interleave(per_anchor)
    labels, values = top_labels[kept].flatten(), top_scores[kept].flatten()
    count = min(len(values), options.max_detections)
    return boxes_yxyx[anchors][:count], labels[:count], values[:count]
