"""mAP and its companions as plain functions over (ground truth, detections per image).

The COCO evaluation itself is faster-coco-eval's (the COCOeval algorithm: 101-point interpolated AP over IoU
0.50:0.05:0.95, area "all", at most 100 detections per image, as YOLOv7's test.py reports it); this module
only builds its inputs and reads its arrays. Anything with `boxes` (N, 4 x1 y1 x2 y2 pixels), `labels` (N,)
and, for detections, `scores` (N,) fits: numpy arrays or torch tensors. Callers elsewhere (a LoadGen accuracy
mode) can call `coco_evaluation` directly.
"""
from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Sequence

import numpy as np
import torch

from utils.record.agreement import match_detections

IOU_THRESHOLDS = tuple(np.round(np.linspace(0.5, 0.95, 10), 2))
CLASS_COLUMNS = ("class_id", "class_name", "objects", "detections", "ap_50_95", "ap_50", "ap_75", "ar_100")


class TruthLike(Protocol):
    boxes: Any  # (N, 4)
    labels: Any  # (N,)


class DetectionsLike(TruthLike, Protocol):
    scores: Any  # (N,)


def _array(values: Any, dtype: type = np.float64) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().to("cpu", torch.float64 if dtype is np.float64 else torch.int64).numpy()
    return np.asarray(values, dtype=dtype)


def _coco_inputs(truths: Sequence[TruthLike], detections: Sequence[DetectionsLike],
                 order: Optional[Sequence[int]] = None) -> tuple[dict, list[dict], list[int]]:
    """COCO ground truth and results; `order` picks the images (repeats allowed: each pick is a new image)."""
    picks = range(len(truths)) if order is None else order
    images, annotations, results, categories = [], [], [], set()
    for image_id, index in enumerate(picks):
        images.append({"id": image_id, "width": 1, "height": 1})
        boxes, labels = _array(truths[index].boxes).reshape(-1, 4), _array(truths[index].labels, np.int64)
        for (x1, y1, x2, y2), label in zip(boxes.tolist(), labels.tolist()):
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": label,
                                "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1), "iscrowd": 0})
            categories.add(label)
        found = detections[index]
        boxes, labels = _array(found.boxes).reshape(-1, 4), _array(found.labels, np.int64)
        for (x1, y1, x2, y2), score, label in zip(boxes.tolist(), _array(found.scores).tolist(), labels.tolist()):
            results.append({"image_id": image_id, "category_id": label, "bbox": [x1, y1, x2 - x1, y2 - y1],
                            "score": score})
    truth = {"images": images, "annotations": annotations,
             "categories": [{"id": c, "name": str(c)} for c in sorted(categories)]}
    return truth, results, sorted(categories)


def _run_cocoeval(truth: dict, results: list[dict]):
    from faster_coco_eval import COCO, COCOeval_faster

    with contextlib.redirect_stdout(io.StringIO()):
        ground = COCO(truth)
        evaluation = COCOeval_faster(ground, ground.loadRes(results), iouType="bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return evaluation


def _mean_valid(values: np.ndarray) -> Optional[float]:
    valid = values[values > -1]
    return float(valid.mean()) if valid.size else None


@dataclass(frozen=True)
class CocoAccuracy:
    map_50_95: float
    map_50: float
    map_75: float
    ar_100: float
    classes: tuple[dict, ...]  # one row per ground-truth class, CLASS_COLUMNS
    images: int
    objects: int
    detections: int


def coco_evaluation(truths: Sequence[TruthLike], detections: Sequence[DetectionsLike],
                    class_names: Sequence[str] = ()) -> CocoAccuracy:
    """COCO box mAP of `detections` against `truths` (one entry per image, same order). Classes are the
    ground truth's: detections of a class with no object anywhere count for nothing, as in COCOeval. No
    detections at all gives 0.0 everywhere (COCOeval itself refuses an empty result list)."""
    if len(truths) != len(detections):
        raise ValueError(f"{len(truths)} images of ground truth but {len(detections)} of detections")
    truth, results, categories = _coco_inputs(truths, detections)
    objects = len(truth["annotations"])
    counted = {c: sum(1 for a in truth["annotations"] if a["category_id"] == c) for c in categories}
    found = {c: sum(1 for r in results if r["category_id"] == c) for c in categories}

    def name(c: int) -> str:
        return class_names[c] if 0 <= c < len(class_names) else str(c)

    if not results or not objects:
        rows = tuple({"class_id": c, "class_name": name(c), "objects": counted[c], "detections": found[c],
                      "ap_50_95": 0.0, "ap_50": 0.0, "ap_75": 0.0, "ar_100": 0.0} for c in categories)
        return CocoAccuracy(0.0, 0.0, 0.0, 0.0, rows, len(truths), objects, len(results))
    evaluation = _run_cocoeval(truth, results)
    precision = np.asarray(evaluation.eval["precision"])  # (iou, recall, class, area, max_dets)
    recall = np.asarray(evaluation.eval["recall"])  # (iou, class, area, max_dets)
    rows = []
    for k, c in enumerate(categories):
        per_iou = precision[:, :, k, 0, -1]
        rows.append({"class_id": c, "class_name": name(c), "objects": counted[c], "detections": found[c],
                     "ap_50_95": _mean_valid(per_iou), "ap_50": _mean_valid(per_iou[0]),
                     "ap_75": _mean_valid(per_iou[5]), "ar_100": _mean_valid(recall[:, k, 0, -1])})
    stats = [max(float(s), 0.0) for s in evaluation.stats]  # -1 marks "nothing to evaluate"
    return CocoAccuracy(stats[0], stats[1], stats[2], stats[8], tuple(rows), len(truths), objects, len(results))


def coco_map(truths: Sequence[TruthLike], detections: Sequence[DetectionsLike],
             order: Optional[Sequence[int]] = None) -> float:
    """mAP@0.5:0.95 alone, of the images `order` picks (a bootstrap sample)."""
    truth, results, _ = _coco_inputs(truths, detections, order)
    if not results or not truth["annotations"]:
        return 0.0
    return max(float(_run_cocoeval(truth, results).stats[0]), 0.0)


@dataclass(frozen=True)
class DropInterval:
    drop: float  # reference mAP - candidate mAP over all images
    low: float
    high: float
    confidence: float
    resamples: int
    seed: int


def map_drop_interval(truths: Sequence[TruthLike], reference: Sequence[DetectionsLike],
                      candidate: Sequence[DetectionsLike], resamples: int = 200, confidence: float = 0.95,
                      seed: int = 0) -> Optional[DropInterval]:
    """The mAP@0.5:0.95 drop from reference to candidate with a percentile bootstrap interval over images:
    each resample draws the images with replacement (seeded, so a run repeats its interval) and scores both
    sides on the same draw, so the interval reflects which images were tested, not two independent draws.
    None with fewer than 2 images."""
    count = len(truths)
    if count < 2:
        return None
    drop = coco_map(truths, reference) - coco_map(truths, candidate)
    generator = np.random.default_rng(seed)
    drops = []
    for _ in range(resamples):
        order = generator.integers(0, count, count).tolist()
        drops.append(coco_map(truths, reference, order) - coco_map(truths, candidate, order))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(drops, [tail, 100.0 - tail])
    return DropInterval(drop, float(low), float(high), confidence, resamples, seed)


@dataclass(frozen=True)
class _Scored:
    boxes: torch.Tensor
    scores: torch.Tensor
    labels: torch.Tensor


def _scored(item: Any, scores: Optional[Any] = None) -> _Scored:
    boxes = torch.as_tensor(_array(item.boxes)).reshape(-1, 4)
    labels = torch.as_tensor(_array(item.labels, np.int64))
    values = torch.as_tensor(_array(item.scores if scores is None else scores))
    return _Scored(boxes, values, labels)


def precision_recall_at(truths: Sequence[TruthLike], detections: Sequence[DetectionsLike], conf_thres: float,
                        iou_threshold: float = 0.5) -> dict[str, Any]:
    """Precision and recall of the detections scoring above conf_thres (what a deployment shows): detections,
    by descending score, each take the unmatched object of their class they overlap most at IoU >=
    iou_threshold (utils.record.agreement.match_detections, with the detections as its reference side)."""
    objects = shown_count = matched = 0
    for truth, found in zip(truths, detections):
        shown = _scored(found)
        keep = shown.scores > conf_thres
        shown = _Scored(shown.boxes[keep], shown.scores[keep], shown.labels[keep])
        counts = match_detections(shown, _scored(truth, np.zeros(len(_array(truth.labels, np.int64)))),
                                  iou_threshold=iou_threshold, strict_iou=math.inf)
        objects, shown_count, matched = objects + counts.candidate, shown_count + counts.reference, matched + counts.loose
    # As in agreement: nothing to find means nothing missed, nothing shown means nothing shown wrongly.
    return {"conf_thres": conf_thres, "iou_threshold": iou_threshold, "objects": objects,
            "detections": shown_count, "true_positives": matched,
            "precision": matched / shown_count if shown_count else 1.0,
            "recall": matched / objects if objects else 1.0}
