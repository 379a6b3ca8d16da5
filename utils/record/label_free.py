"""The verdict of a run without labels, as plain functions: `within_budget`, `different` or `undecided`.

The torch fp32 reference's detections above the deployed threshold (what a user sees; boxes of zero area
dropped) stand in for the labels. Both sides' detections at the accuracy pass's settings are scored against
them at IoU 0.5, and the estimate
is the reference's AP@0.5 minus the candidate's, with a percentile bootstrap interval over images (both sides
scored on the same draws). IoU 0.5 because a few pixels of box jitter, which costs a candidate nothing against
real labels, fails the higher IoU thresholds against boxes taken as exact: scored at 0.5:0.95 the reference's
advantage of scoring itself swamps the drop. See docs/verdict.md for how this was chosen and its error rates.

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

from utils.record.accuracy import RankedMatches, _array, match_image

WITHIN_BUDGET = "within_budget"
DIFFERENT = "different"
UNDECIDED = "undecided"
AT_IOU_50 = (0,)  # IOU_THRESHOLDS index of 0.5
# A percentile bootstrap over a handful of images understates the spread: on the calibration ladder, 8 images
# where no detection changed read "at most 0.000" for candidates whose real drop was up to 0.005.
MIN_IMAGES = 30


@dataclass(frozen=True)
class PseudoTruth:
    boxes: np.ndarray
    labels: np.ndarray


def pseudo_labels(reference: Sequence[Any], shown_above: float) -> list[PseudoTruth]:
    """The reference's detections scoring above `shown_above` as objects, their scores dropped. A box of zero
    area (a detection in the letterbox padding, clipped to the image edge) is no object: nothing can hit it.
    Taken from the detections at mAP settings, so that the reference scored against them gets exactly 1.0."""
    truths = []
    for found in reference:
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


def label_free_verdict(reference_map: Sequence[Any], candidate_map: Sequence[Any], shown_above: float,
                       budget: float, confidence: float = 0.95, resamples: int = 200, seed: int = 0,
                       ) -> dict[str, Any]:
    """The label-free verdict over images given in the same order on both sides, detections at the accuracy
    pass's settings; `shown_above` is the deployed conf_thres. Returns the summary.json entry."""
    images = len(reference_map)
    if len(candidate_map) != images:
        raise ValueError(f"{images} images of reference detections but {len(candidate_map)} of the candidate's")
    base = {"estimates": f"the mAP@0.5 drop against the reference's detections above conf_thres {shown_above}",
            "budget": budget, "confidence": confidence, "images": images}
    truths = pseudo_labels(reference_map, shown_above)
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
    estimate = mine.map(thresholds=AT_IOU_50) - theirs.map(thresholds=AT_IOU_50)
    generator = np.random.default_rng(seed)
    drops = []
    for _ in range(resamples):
        order = generator.integers(0, images, images)
        drops.append(mine.map(order, AT_IOU_50) - theirs.map(order, AT_IOU_50))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = (float(v) for v in np.percentile(drops, [tail, 100.0 - tail]))
    verdict = decide(estimate, low, high, budget)
    entry = dict(base, verdict=verdict, estimate=estimate, low=low, high=high, reference_objects=objects,
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
