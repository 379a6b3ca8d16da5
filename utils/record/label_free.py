"""The verdict of a run without labels, as plain functions: `within_budget`, `different` or `undecided`.

Something has to stand in for the labels. By default it is the torch fp32 reference's detections on the mirror
images (flipped left to right, their boxes mapped back), above the deployed conf_thres: what a user would see of
a view the reference detects as well as the image itself (detectors are trained with horizontal flips), but not
identically. Both sides' detections at the accuracy pass's settings are scored against it at mAP@0.5:0.95, the
budget's own figure, and the estimate is the reference's mAP minus the candidate's, with a percentile bootstrap
interval over images (both sides scored on the same draws).

Why the mirror view: scored against its own detections the reference is exact, so any change a candidate makes
reads as a loss. Three pixels of box jitter fail IoU 0.75-0.95, and a score that slips from 0.26 to 0.24 past
conf_thres turns a shown object into a miss, while against real labels neither costs anything. Against the mirror
view the reference pays for its own jitter and threshold wobble as the candidate does, so only what the candidate
adds counts, box quality included. `reference` (benchmark.accuracy.label_free_truth) keeps the reference's own
detections, for models not trained with flips; scored against itself only IoU 0.5 means anything, so that mode
scores mAP@0.5. See docs/verdict.md for how this was chosen and its measured error rates.

- `within_budget`: the interval's upper end is at most the budget: "mAP drop at most X (95%)".
- `different`: the interval's lower end is above the budget.
- `undecided`: the interval contains the budget; it says so, and how many images would narrow the interval
  enough to decide it (the half-width shrinks as one over the square root of the images).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import torch

from pipelines.contract import Detections
from utils.record.accuracy import RankedMatches, _array, match_image

WITHIN_BUDGET = "within_budget"
DIFFERENT = "different"
UNDECIDED = "undecided"
MIRRORED = "mirrored"  # benchmark.accuracy.label_free_truth: the reference's detections on the mirror images
REFERENCE = "reference"  # its detections on the images themselves
AT_IOU_50 = (0,)  # IOU_THRESHOLDS index of 0.5
# A percentile bootstrap over a handful of images understates the spread: on the calibration ladder, 8 images
# where no detection changed read "at most 0.000" for candidates whose real drop was up to 0.005.
MIN_IMAGES = 30


@dataclass(frozen=True)
class PseudoTruth:
    boxes: np.ndarray
    labels: np.ndarray


def mirror_image(image: np.ndarray) -> np.ndarray:
    """An H x W (x C) image flipped left to right."""
    return np.ascontiguousarray(image[:, ::-1])


def mirrored_back(found: Detections, width: int) -> Detections:
    """Detections made on the mirror image of an image `width` pixels wide, in that image's own pixels: a corner
    at x on the mirror image is at width - x on the image (pixel i spans [i, i + 1] and becomes width - 1 - i)."""
    boxes = found.boxes.clone()
    boxes[:, [0, 2]] = width - found.boxes[:, [2, 0]]
    masks = None if found.masks is None else torch.flip(found.masks, dims=[-1])
    return Detections(boxes, found.scores, found.labels, masks)


def pseudo_labels(judge: Sequence[Any], shown_above: float) -> list[PseudoTruth]:
    """The judge's detections scoring above `shown_above` as objects, their scores dropped. A box of zero
    area (a detection in the letterbox padding, clipped to the image edge) is no object: nothing can hit it."""
    truths = []
    for found in judge:
        boxes, labels, scores = _array(found.boxes).reshape(-1, 4), _array(found.labels, np.int64), _array(found.scores)
        keep = (scores > shown_above) & np.all(boxes[:, 2:] > boxes[:, :2], axis=1)
        truths.append(PseudoTruth(boxes[keep], labels[keep]))
    return truths


def images_to_decide(images: int, estimate: float, low: float, high: float, budget: float) -> Optional[int]:
    """Images at which an interval of the same spread would exclude the budget: the half-width scales as
    1/sqrt(images). None when the estimate sits on the budget (no number of images decides it)."""
    distance = abs(estimate - budget)
    half = (high - low) / 2
    if distance <= 0 or not math.isfinite(half):
        return None
    return max(images + 1, math.ceil(images * (half / distance) ** 2))


def decide(estimate: float, low: float, high: float, budget: float) -> str:
    if high <= budget:
        return WITHIN_BUDGET
    if low > budget:
        return DIFFERENT
    return UNDECIDED


def labelled_verdict(drop: float, low: float, high: float, budget: float) -> str:
    """The same three-way rule on the drop against real labels (used to calibrate the label-free one)."""
    return decide(drop, low, high, budget)


def stand_in(judge: str, shown_above: float) -> str:
    """What the label-free figures are scored against, in words."""
    if judge == MIRRORED:
        return (f"the torch fp32 reference's detections on the mirror images (flipped left to right, boxes mapped "
                f"back) above conf_thres {shown_above}")
    return f"the torch fp32 reference's detections above conf_thres {shown_above}"


def label_free_verdict(reference_map: Sequence[Any], candidate_map: Sequence[Any], shown_above: float,
                       budget: float, judge_map: Optional[Sequence[Any]] = None, confidence: float = 0.95,
                       resamples: int = 200, seed: int = 0) -> dict[str, Any]:
    """The label-free verdict over images given in the same order on every side, detections at the accuracy
    pass's settings; `shown_above` is the deployed conf_thres. `judge_map`: the reference's detections on the
    mirror images, mapped back (the MIRRORED stand-in); None scores against the reference's own detections
    (REFERENCE), at IoU 0.5. Returns the summary.json entry."""
    images = len(reference_map)
    for name, other in (("candidate's", candidate_map), ("mirror images'", judge_map)):
        if other is not None and len(other) != images:
            raise ValueError(f"{images} images of reference detections but {len(other)} of the {name}")
    judge = MIRRORED if judge_map is not None else REFERENCE
    figure, thresholds = ("mAP@0.5:0.95", None) if judge == MIRRORED else ("mAP@0.5", AT_IOU_50)
    base = {"estimates": f"the {figure} drop against {stand_in(judge, shown_above)}", "figure": figure,
            "label_free_truth": judge, "budget": budget, "confidence": confidence, "images": images}
    truths = pseudo_labels(judge_map if judge_map is not None else reference_map, shown_above)
    objects = sum(len(t.labels) for t in truths)
    if images < MIN_IMAGES or objects == 0:
        why = (f"{images} image(s): the interval over images needs at least {MIN_IMAGES}" if images < MIN_IMAGES
               else "the reference shows no detection at the deployed threshold on these images, so there is "
                    "nothing to compare against")
        needed = MIN_IMAGES if images < MIN_IMAGES else None
        return dict(base, verdict=UNDECIDED, estimate=None, low=None, high=None, reason=why, images_needed=needed,
                    statement=f"undecided: {why}")
    mine = RankedMatches([match_image(t, d) for t, d in zip(truths, reference_map)])
    theirs = RankedMatches([match_image(t, d) for t, d in zip(truths, candidate_map)])
    estimate = mine.map(thresholds=thresholds) - theirs.map(thresholds=thresholds)
    generator = np.random.default_rng(seed)
    drops = []
    for _ in range(resamples):
        order = generator.integers(0, images, images)
        drops.append(mine.map(order, thresholds) - theirs.map(order, thresholds))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = (float(v) for v in np.percentile(drops, [tail, 100.0 - tail]))
    verdict = decide(estimate, low, high, budget)
    entry = dict(base, verdict=verdict, estimate=estimate, low=low, high=high, stand_in_objects=objects,
                 resamples=resamples, seed=seed)
    if verdict == WITHIN_BUDGET:
        entry["statement"] = f"mAP drop at most {max(high, 0.0):.3f} ({confidence:.0%}), within the budget {budget}"
    elif verdict == DIFFERENT:
        entry["statement"] = f"mAP drop at least {low:.3f} ({confidence:.0%}), above the budget {budget}"
    else:
        needed = images_to_decide(images, estimate, low, high, budget)
        entry["images_needed"] = needed
        entry["reason"] = (f"the {confidence:.0%} interval of the drop [{low:+.3f}, {high:+.3f}] contains the "
                           f"budget {budget}")
        entry["statement"] = (f"undecided: {entry['reason']}; about {needed} images would decide it"
                              if needed else f"undecided: {entry['reason']}, and its estimate sits on it")
    return entry
