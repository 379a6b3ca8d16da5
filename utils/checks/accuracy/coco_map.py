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

from utils.checks.agreement.matching import match_detections

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


def crowd_flags(truth: TruthLike) -> np.ndarray:
    """(N,) bool: which objects are COCO `iscrowd` regions (a truth without a `crowd` field has none)."""
    labels = _array(truth.labels, np.int64)
    crowd = getattr(truth, "crowd", None)
    return np.zeros(len(labels), dtype=bool) if crowd is None else np.asarray(crowd, dtype=bool).reshape(-1)


def _coco_inputs(truths: Sequence[TruthLike], detections: Sequence[DetectionsLike],
                 order: Optional[Sequence[int]] = None) -> tuple[dict, list[dict], list[int]]:
    """COCO ground truth and results; `order` picks the images (repeats allowed: each pick is a new image)."""
    picks = range(len(truths)) if order is None else order
    images, annotations, results, categories = [], [], [], set()
    for image_id, index in enumerate(picks):
        images.append({"id": image_id, "width": 1, "height": 1})
        boxes, labels = _array(truths[index].boxes).reshape(-1, 4), _array(truths[index].labels, np.int64)
        for (x1, y1, x2, y2), label, crowd in zip(boxes.tolist(), labels.tolist(),
                                                  crowd_flags(truths[index]).tolist()):
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": label,
                                "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1),
                                "iscrowd": int(crowd)})
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
    # Crowd regions are not objects to find: COCOeval ignores them and what hits them.
    objects = sum(1 for a in truth["annotations"] if not a["iscrowd"])
    counted = {c: sum(1 for a in truth["annotations"] if a["category_id"] == c and not a["iscrowd"])
               for c in categories}
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
    if not results or not any(not a["iscrowd"] for a in truth["annotations"]):
        return 0.0
    return max(float(_run_cocoeval(truth, results).stats[0]), 0.0)


MAX_DETS = 100  # per image and class, as COCOeval's last maxDets
RECALL_POINTS = np.linspace(0.0, 1.0, 101)


def _coco_iou(dets: np.ndarray, truths: np.ndarray, crowd: Optional[np.ndarray] = None) -> np.ndarray:
    """(D, 4) and (G, 4) x1y1x2y2 -> (D, G) IoU as COCOeval computes it for boxes (areas w * h, no +1); against
    a crowd region the union is the detection's own area (how much of the detection lies inside it)."""
    lo = np.maximum(dets[:, None, :2], truths[None, :, :2])
    hi = np.minimum(dets[:, None, 2:], truths[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0.0, None), axis=2)
    area_d = np.prod(dets[:, 2:] - dets[:, :2], axis=1)
    area_t = np.prod(truths[:, 2:] - truths[:, :2], axis=1)
    union = area_d[:, None] + area_t[None, :] - inter
    if crowd is not None:
        union = np.where(crowd[None, :], area_d[:, None], union)
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


@dataclass(frozen=True)
class ImageMatches:
    """One image's detections of one class, matched once at every IoU threshold as COCOeval matches them:
    by descending score (the top MAX_DETS), each takes the unmatched object it overlaps most at IoU >= t; only
    when no object is left to take does it fall on a crowd region, and is then ignored (neither a hit nor a
    false positive)."""

    scores: np.ndarray  # (D,)
    hits: np.ndarray  # (T, D) bool
    objects: int  # crowd regions excluded
    ignored: Optional[np.ndarray] = None  # (T, D) bool, None when nothing is ignored


def _last_best(eligible: np.ndarray, overlaps: np.ndarray) -> np.ndarray:
    """Per threshold row, the index of the highest eligible overlap; COCOeval keeps the last of equal ones."""
    count = eligible.shape[1]
    return count - 1 - np.argmax(np.where(eligible, overlaps[None, :], -1.0)[:, ::-1], axis=1)


def match_image(truth: TruthLike, found: DetectionsLike) -> dict[int, ImageMatches]:
    boxes, labels = _array(truth.boxes).reshape(-1, 4), _array(truth.labels, np.int64)
    crowd = crowd_flags(truth)
    dboxes, dlabels, dscores = _array(found.boxes).reshape(-1, 4), _array(found.labels, np.int64), _array(found.scores)
    thresholds = np.minimum(np.asarray(IOU_THRESHOLDS), 1 - 1e-10)[:, None]
    matches = {}
    for label in set(labels.tolist()) | set(dlabels.tolist()):
        mine_truth = labels == label
        objects, regions = boxes[mine_truth & ~crowd], boxes[mine_truth & crowd]
        mine = dlabels == label
        order = np.argsort(-dscores[mine], kind="mergesort")[:MAX_DETS]
        scores, candidates = dscores[mine][order], dboxes[mine][order]
        hits = np.zeros((len(thresholds), len(scores)), dtype=bool)
        ignored = np.zeros_like(hits)
        if len(objects):
            iou = _coco_iou(candidates, objects)
            taken = np.zeros((len(thresholds), len(objects)), dtype=bool)
            reachable = np.nonzero(iou.max(axis=1) >= min(IOU_THRESHOLDS))[0]  # the others match nothing
            for d in reachable:
                eligible = ~taken & (iou[d][None, :] >= thresholds)
                best = _last_best(eligible, iou[d])
                found_any = eligible.any(axis=1)
                hits[found_any, d] = True
                taken[np.nonzero(found_any)[0], best[found_any]] = True
        if len(regions):
            # A crowd region takes any number of detections, but only those no object took.
            inside = _coco_iou(candidates, regions, np.ones(len(regions), dtype=bool)).max(axis=1)
            ignored = ~hits & (inside[None, :] >= thresholds)
        matches[label] = ImageMatches(scores, hits, len(objects), ignored if ignored.any() else None)
    return matches


class RankedMatches:
    """Per-image matches ranked once per class over all images, so that a bootstrap draw only re-weights them:
    an image drawn k times counts k times (its detections, hits and objects), which gives the precision
    envelope of COCOeval's accumulate over the draw's images without re-sorting anything. The envelope only
    ever takes its values at hits (precision rises only there), so a draw costs one cumulative sum over the
    detections and one per threshold over its hits."""

    def __init__(self, per_image: Sequence[dict[int, ImageMatches]]):
        self.images = len(per_image)
        self.classes = []
        for label in sorted({label for matches in per_image for label in matches}):
            parts = [(index, matches[label]) for index, matches in enumerate(per_image) if label in matches]
            scores = np.concatenate([part.scores for _, part in parts])
            owner = np.concatenate([np.full(len(part.scores), index) for index, part in parts]).astype(np.int64)
            hits = np.concatenate([part.hits for _, part in parts], axis=1)
            ignored = np.concatenate([np.zeros_like(part.hits) if part.ignored is None else part.ignored
                                      for _, part in parts], axis=1)
            order = np.argsort(-scores, kind="mergesort")
            objects = np.zeros(self.images)
            for index, part in parts:
                objects[index] = part.objects
            ranked, counted = hits[:, order], ~ignored[:, order]
            self.classes.append((owner[order], [np.nonzero(row)[0] for row in ranked],
                                 None if counted.all() else counted, objects))

    def map(self, order: Optional[Sequence[int]] = None, thresholds: Optional[Sequence[int]] = None) -> float:
        """mAP@0.5:0.95 over the images `order` picks (repeats allowed); classes without an object in them
        do not count. `thresholds` picks IoU thresholds by index into IOU_THRESHOLDS ((0,): mAP@0.5)."""
        weights = np.ones(self.images) if order is None else np.bincount(np.asarray(order, dtype=np.int64),
                                                                         minlength=self.images).astype(float)
        aps = []
        for owner, hit_rows, counted, objects in self.classes:
            total = float(objects @ weights)
            if not total:
                continue
            row = weights[owner]
            shown = np.cumsum(row)  # detections up to each rank
            for threshold, rows in enumerate(hit_rows):
                if thresholds is not None and threshold not in thresholds:
                    continue
                if not len(rows):
                    aps.append(0.0)
                    continue
                # Detections on crowd regions count neither as hits nor as false positives.
                seen = shown if counted is None else np.cumsum(row * counted[threshold])
                tp = np.cumsum(row[rows])
                recall = tp / total
                precision = tp / (seen[rows] + np.spacing(1))
                precision = np.maximum.accumulate(precision[::-1])[::-1]
                at = np.searchsorted(recall, RECALL_POINTS, side="left")
                values = np.zeros(len(RECALL_POINTS))  # recall never reached: precision 0
                inside = at < len(rows)
                values[inside] = precision[at[inside]]
                aps.append(float(np.mean(values)))
        return float(np.mean(aps)) if aps else 0.0


def map_of_matches(per_image: Sequence[dict[int, ImageMatches]], order: Optional[Sequence[int]] = None) -> float:
    """mAP@0.5:0.95 from per-image matches (COCOeval's accumulate: 101-point interpolated precision) over the
    images `order` picks, repeats allowed."""
    return RankedMatches(per_image).map(order)


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
    Images are matched once (`match_image`); a resample only re-weights them. None with fewer than 2 images."""
    count = len(truths)
    if count < 2:
        return None
    mine = RankedMatches([match_image(t, d) for t, d in zip(truths, reference)])
    theirs = RankedMatches([match_image(t, d) for t, d in zip(truths, candidate)])
    drop = mine.map() - theirs.map()
    generator = np.random.default_rng(seed)
    drops = []
    for _ in range(resamples):
        order = generator.integers(0, count, count)
        drops.append(mine.map(order) - theirs.map(order))
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


def _off_crowds(shown: _Scored, truth: TruthLike, iou_threshold: float) -> tuple[_Scored, _Scored]:
    """The shown detections less those that fall on a crowd region of their class (at least iou_threshold of
    the detection inside it) and overlap no object of it at that IoU, and the objects less the crowds."""
    boxes, labels, crowd = _array(truth.boxes).reshape(-1, 4), _array(truth.labels, np.int64), crowd_flags(truth)
    objects = _Scored(torch.as_tensor(boxes[~crowd]), torch.zeros(int((~crowd).sum()), dtype=torch.float64),
                      torch.as_tensor(labels[~crowd]))
    if not crowd.any() or not len(shown.scores):
        return shown, objects
    dboxes, dlabels = shown.boxes.double().numpy(), shown.labels.numpy()
    same = dlabels[:, None] == labels[None, :]
    inside = np.where(same[:, crowd], _coco_iou(dboxes, boxes[crowd], np.ones(int(crowd.sum()), bool)), 0.0)
    hits = np.where(same[:, ~crowd], _coco_iou(dboxes, boxes[~crowd]), 0.0)
    dropped = (inside.max(axis=1, initial=0.0) >= iou_threshold) & (hits.max(axis=1, initial=0.0) < iou_threshold)
    keep = torch.as_tensor(~dropped)
    return _Scored(shown.boxes[keep], shown.scores[keep], shown.labels[keep]), objects


def precision_recall_at(truths: Sequence[TruthLike], detections: Sequence[DetectionsLike], conf_thres: float,
                        iou_threshold: float = 0.5) -> dict[str, Any]:
    """Precision and recall of the detections scoring above conf_thres (what a deployment shows): detections,
    by descending score, each take the unmatched object of their class they overlap most at IoU >=
    iou_threshold (utils.checks.agreement.matching.match_detections, with the detections as its reference side).
    Crowd regions are not objects, and a detection that only hits one is not counted."""
    objects = shown_count = matched = 0
    for truth, found in zip(truths, detections):
        shown = _scored(found)
        keep = shown.scores > conf_thres
        shown, real = _off_crowds(_Scored(shown.boxes[keep], shown.scores[keep], shown.labels[keep]), truth,
                                  iou_threshold)
        counts = match_detections(shown, real, iou_threshold=iou_threshold, strict_iou=math.inf)
        objects, shown_count, matched = objects + counts.candidate, shown_count + counts.reference, matched + counts.loose
    # As in agreement: nothing to find means nothing missed, nothing shown means nothing shown wrongly.
    return {"conf_thres": conf_thres, "iou_threshold": iou_threshold, "objects": objects,
            "detections": shown_count, "true_positives": matched,
            "precision": matched / shown_count if shown_count else 1.0,
            "recall": matched / objects if objects else 1.0}
