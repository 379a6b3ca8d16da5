"""Non-maximum suppression of raw YOLOv7 predictions, with the reference implementation's semantics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from pipelines.boxes.kernels import nms
from pipelines.boxes.conversions import xywh_to_xyxy
from pipelines.settings import cap

# Shifting each class's boxes this far apart lets one NMS call treat classes independently;
# it must exceed any box coordinate.
CLASS_OFFSET_PX = 4096
# One NMS call compares every candidate with those after it; above this many candidates of several classes
# (mAP settings' conf 0.001 on an untrained network gives up to max_nms) one call per class compares fewer pairs
# and is faster. benchmarks/overhead/nms_split.py measures where the two cross.
PER_CLASS_ABOVE = 3000


@dataclass(frozen=True, slots=True)
class NmsSettings:
    """What NMS keeps: candidates scoring above `conf_thres` (strictly), of `classes` only (None: every class),
    every class above it per candidate with `multi_label` (else its best), the `max_nms` best of them compared,
    a box dropped where a better one overlaps it by more than `iou_thres` (of its own class, or of any with
    `agnostic`), at most `max_det` per image (every one for pipelines.settings.NO_CAP)."""

    conf_thres: float = 0.25
    iou_thres: float = 0.45
    classes: Sequence[int] | None = None
    agnostic: bool = False
    multi_label: bool = False
    max_det: int = 300
    max_nms: int = 30000


def _candidates(
    rows: torch.Tensor, conf_thres: float, multi_label: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Boxes (xyxy), scores and class indices of the rows (already past the objectness test) whose class scores
    pass too."""
    class_scores = rows[:, 5:] * rows[:, 4:5]
    boxes = xywh_to_xyxy(rows[:, :4])
    if multi_label:
        row_idx, class_idx = (class_scores > conf_thres).nonzero(as_tuple=True)
        return boxes[row_idx], class_scores[row_idx, class_idx], class_idx
    best_scores, best_class = class_scores.max(dim=1)
    passing = best_scores > conf_thres
    return boxes[passing], best_scores[passing], best_class[passing]


def _passing_rows(image_pred: torch.Tensor, conf_thres: float) -> torch.Tensor:
    """The rows whose objectness passes and, under a non-negative cut, whose best class can pass as well:
    objectness x score rounds monotonically in the score for objectness above such a cut, so a row's best class
    bounds all of its products, and the rows whose best cannot pass go before the (rows x classes) products are
    formed. Kept as `not <=`: a row with a NaN goes on."""
    objectness = image_pred[:, 4]
    passing = objectness > conf_thres
    if conf_thres < 0:
        return image_pred[passing]
    if bool(passing.all()):
        # Nothing to sort by objectness (a layout without one carries 1, and its rows are often a transposed
        # view): the best-class test on the view, before thousands of rows are copied.
        return image_pred[~(objectness * image_pred[:, 5:].amax(dim=1) <= conf_thres)]
    rows = image_pred[passing]
    return rows[~(rows[:, 4] * rows[:, 5:].amax(dim=1) <= conf_thres)]


def _suppress_one_image(image_pred: torch.Tensor, settings: NmsSettings) -> torch.Tensor:
    conf_thres, classes, max_nms = settings.conf_thres, settings.classes, settings.max_nms
    rows = _passing_rows(image_pred, conf_thres)
    if not len(rows):
        # Frames with nothing in them are common: skip a dozen operations on empty tensors, which beside another
        # stream's inference cost several times what they cost on an idle core.
        return image_pred.new_zeros((0, 6))
    boxes, scores, class_idx = _candidates(rows, conf_thres, settings.multi_label)
    if classes is not None:
        wanted = torch.isin(class_idx, torch.as_tensor(list(classes), device=class_idx.device))
        boxes, scores, class_idx = boxes[wanted], scores[wanted], class_idx[wanted]
    if scores.numel() > max_nms:
        # Stable so that equal scores at the cut are chosen the same way every run.
        top = torch.sort(scores, descending=True, stable=True).indices[:max_nms]
        boxes, scores, class_idx = boxes[top], scores[top], class_idx[top]
    keep = _kept(boxes, scores, class_idx, settings.iou_thres, settings.agnostic)[:cap(settings.max_det)]
    return torch.cat((boxes[keep], scores[keep, None], class_idx[keep, None].to(boxes.dtype)), dim=1)


def _kept(boxes: torch.Tensor, scores: torch.Tensor, class_idx: torch.Tensor, iou_thres: float,
          agnostic: bool) -> torch.Tensor:
    """Indices of the boxes NMS keeps, by descending score. Many candidates go class by class: each class's
    boxes keep their order and their offset coordinates, so the same boxes are kept as by one call over all,
    and ordered as it orders them (its sort is stable: equal scores in index order)."""
    if agnostic:
        return nms(boxes, scores, iou_thres)
    shifted = boxes + class_idx[:, None].to(boxes.dtype) * CLASS_OFFSET_PX
    if len(scores) <= PER_CLASS_ABOVE or bool(class_idx.min() == class_idx.max()):
        return nms(shifted, scores, iou_thres)
    by_class = torch.argsort(class_idx, stable=True)
    counts = torch.unique_consecutive(class_idx[by_class], return_counts=True)[1]
    kept = torch.cat([members[nms(shifted[members], scores[members], iou_thres)]
                      for members in torch.split(by_class, counts.tolist())]).sort().values
    return kept[torch.sort(scores[kept], descending=True, stable=True).indices]


def non_max_suppression(prediction: torch.Tensor | Sequence[torch.Tensor],
                        settings: NmsSettings = NmsSettings()) -> list[torch.Tensor]:
    """Filter (B, N, 5 + nc) predictions (cx, cy, w, h, obj, class scores...) into detections; or a sequence of
    (N_i, 5 + nc) rows, one per image.

    Returns one (n, 6) tensor per image: x1, y1, x2, y2, score, class; score = obj * class score,
    sorted by score descending, at most `settings.max_det` rows (every row for pipelines.settings.NO_CAP).
    Thresholds are strict (score == conf is dropped).
    """
    return [
        _suppress_one_image(
            # torchvision's CPU NMS only accepts float32/float64.
            image_pred.float() if image_pred.dtype in (torch.float16, torch.bfloat16) else image_pred, settings)
        for image_pred in prediction
    ]


class NonMaxSuppression(nn.Module):
    def __init__(self, settings: NmsSettings):
        super().__init__()
        self.settings = settings

    def forward(self, prediction: torch.Tensor | Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return non_max_suppression(prediction, self.settings)
