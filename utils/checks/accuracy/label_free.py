"""The verdict of a run without labels, as plain functions: `within_budget`, `different` or `undecided`.

Something has to stand in for the labels. By default it is the torch fp32 reference's detections on mirror views
of each image (flipped left to right, some also shifted by a few pixels, their boxes mapped back), above the
deployed conf_thres: what a user would see of views the reference detects as well as the image itself (detectors
are trained with horizontal flips), but not identically. Both sides' detections at the accuracy pass's settings
are scored against each view at mAP@0.5:0.95, the budget's own figure; the estimate is the reference's mAP minus
the candidate's, averaged over the views, with a percentile bootstrap interval over images (every side and view
scored on the same draws).

Why mirror views: scored against its own detections the reference is exact, so any change a candidate makes
reads as a loss. Three pixels of box jitter fail IoU 0.75-0.95, and a score that slips from 0.26 to 0.24 past
conf_thres turns a shown object into a miss, while against real labels neither costs anything. Against a mirror
view the reference pays for its own jitter and threshold wobble as the candidate does, so only what the candidate
adds counts, box quality included. Why several: one view's own quirks move a small drop by as much as the budget
(the calibration ladder), and the interval over images does not see them; shifting the image moves every object
to another phase of the network's grid, so each view errs its own way, and their mean errs less.
`reference` (benchmark.accuracy.label_free_truth) keeps the reference's own detections, for models not trained
with flips; scored against itself only IoU 0.5 means anything, so that mode scores mAP@0.5. See docs/verdict.md
for how this was chosen and its measured error rates.

- `within_budget`: the interval's upper end is at most the budget: "mAP drop at most X (95%)".
- `different`: the interval's lower end is above the budget, and so is each view's own. The stand-in errs high
  (it charges a candidate for changing what the reference gets wrong too), so the upper end is a bound and the
  lower end is not; one view's quirks can lift the mean over the budget, but not every view's interval.
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
from utils.checks.accuracy.coco_map import RankedMatches, _array, match_image

WITHIN_BUDGET = "within_budget"
DIFFERENT = "different"
UNDECIDED = "undecided"
MIRRORED = "mirrored"  # benchmark.accuracy.label_free_truth: the reference's detections on the mirror images
REFERENCE = "reference"  # its detections on the images themselves
AT_IOU_50 = (0,)  # IOU_THRESHOLDS index of 0.5
# A percentile bootstrap over a handful of images understates the spread: on the calibration ladder, 8 images
# where no detection changed read "at most 0.000" for candidates whose real drop was up to 0.005.
MIN_IMAGES = 30
CONFIDENCE = 0.95  # of every interval the verdict states


# Padding of a shifted view: YOLO's letterbox grey, so the new border reads as the padding the model knows.
VIEW_PAD_VALUE = 114


@dataclass(frozen=True)
class PseudoTruth:
    boxes: np.ndarray
    labels: np.ndarray


@dataclass(frozen=True)
class JudgeView:
    """A mirror view of an image: padded on the left and top by these fractions of its longer side (which moves
    every object right and down, to another phase of the network's grid), then flipped left to right."""
    shift_x: float = 0.0
    shift_y: float = 0.0

    def offsets(self, height: int, width: int) -> tuple[int, int]:
        """The padding in pixels, (left, top)."""
        longer = max(height, width)
        return round(self.shift_x * longer), round(self.shift_y * longer)


# The plain mirror first: benchmark.accuracy.judge_views takes the first N. Shifts of 1/40 and 1/20 of the longer
# side are 8 and 16 pixels of a 320-pixel input: a quarter and a half of the stride-32 grid's cell.
JUDGE_VIEWS = (JudgeView(), JudgeView(0.05, 0.05), JudgeView(0.05, 0.0), JudgeView(0.0, 0.05),
               JudgeView(0.025, 0.025))


def mirror_image(image: np.ndarray) -> np.ndarray:
    """An H x W (x C) image flipped left to right."""
    return np.ascontiguousarray(image[:, ::-1])


def view_image(image: np.ndarray, view: JudgeView) -> np.ndarray:
    """The H x W (x C) image as `view` shows it."""
    left, top = view.offsets(*image.shape[:2])
    if left or top:
        padding = ((top, 0), (left, 0)) + ((0, 0),) * (image.ndim - 2)
        image = np.pad(image, padding, mode="constant", constant_values=VIEW_PAD_VALUE)
    return mirror_image(image)


def from_view(found: Detections, view: JudgeView, height: int, width: int) -> Detections:
    """Detections made on `view` of an image of height x width pixels, in that image's own pixels."""
    left, top = view.offsets(height, width)
    back = mirrored_back(found, width + left)
    if not (left or top):
        return back
    boxes = back.boxes.clone()
    boxes[:, [0, 2]] -= left
    boxes[:, [1, 3]] -= top
    masks = None if back.masks is None else back.masks[..., top:, left:]
    return Detections(boxes, back.scores, back.labels, masks)


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


def stand_in(judge: str, shown_above: float, views: int = 1, reference: str = "torch fp32") -> str:
    """What the label-free figures are scored against, in words."""
    if judge == MIRRORED:
        shifted = "" if views == 1 else (f", {views - 1} of them also shifted by a few pixels; figures averaged over "
                                         f"the {views} views")
        return (f"the {reference} reference's detections on mirror images (flipped left to right{shifted}; boxes "
                f"mapped back) above conf_thres {shown_above}")
    return f"the {reference} reference's detections above conf_thres {shown_above}"


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class ViewedDrop(Interval):
    """The drop averaged over the views, with its interval, and each view's own (in JUDGE_VIEWS order)."""
    views: tuple[Interval, ...] = ()

    def most_lenient(self) -> tuple[int, Interval]:
        """The view whose interval reaches lowest, and that interval."""
        return min(enumerate(self.views), key=lambda item: item[1].low)


@dataclass(frozen=True)
class Resampling:
    """How an interval over images is drawn: a percentile bootstrap of `resamples` draws (0: no interval) from a
    generator seeded with `seed`, at `confidence`."""

    resamples: int = 200
    seed: int = 0
    confidence: float = CONFIDENCE


@dataclass(frozen=True)
class StandInJudge:
    """What stands in for the labels: the reference's detections above the deployed conf_thres `shown_above`,
    on each judge view (`judge_maps`: per view of JUDGE_VIEWS, its detections mapped back; the MIRRORED
    stand-in) or, with None, its detections on the images themselves (REFERENCE). `reference` names it."""

    shown_above: float
    judge_maps: Optional[Sequence[Sequence[Any]]] = None
    reference: str = "torch fp32"


def drop_over_views(truths: Sequence[Sequence[PseudoTruth]], reference_map: Sequence[Any],
                    candidate_map: Sequence[Any], thresholds: Optional[Sequence[int]] = None,
                    resampling: Resampling = Resampling()) -> ViewedDrop:
    """The reference's mAP minus the candidate's against each view's stand-in objects, averaged over the views,
    and per view, each with a percentile bootstrap interval over images (every side and view on the same draws;
    no interval, low = high = estimate, with 0 resamples)."""
    pairs = [(RankedMatches([match_image(t, d) for t, d in zip(view, reference_map)]),
              RankedMatches([match_image(t, d) for t, d in zip(view, candidate_map)])) for view in truths]

    def drops(order: Optional[np.ndarray] = None) -> np.ndarray:
        return np.array([mine.map(order, thresholds) - theirs.map(order, thresholds) for mine, theirs in pairs])

    estimates = drops()
    mean = float(estimates.mean())
    if not resampling.resamples:
        return ViewedDrop(mean, mean, mean, tuple(Interval(float(e), float(e), float(e)) for e in estimates))
    images = len(reference_map)
    generator = np.random.default_rng(resampling.seed)
    drawn = np.array([drops(generator.integers(0, images, images)) for _ in range(resampling.resamples)])
    tail = (1.0 - resampling.confidence) / 2.0 * 100.0
    low, high = np.percentile(drawn.mean(axis=1), [tail, 100.0 - tail])
    lows, highs = np.percentile(drawn, [tail, 100.0 - tail], axis=0)
    return ViewedDrop(mean, float(low), float(high),
                      tuple(Interval(float(e), float(lo), float(hi)) for e, lo, hi in zip(estimates, lows, highs)))


def label_free_verdict(reference_map: Sequence[Any], candidate_map: Sequence[Any], judge: StandInJudge,
                       budget: float, resampling: Resampling = Resampling(),
                       measured: Optional[ViewedDrop] = None) -> dict[str, Any]:
    """The label-free verdict over images given in the same order on every side, detections at the accuracy
    pass's settings, against what `judge` stands in for the labels (at IoU 0.5 for its detections on the images
    themselves). `measured`: drop_over_views' result on these same inputs and `resampling`, when the caller
    already has it (it is the costly part). Returns the summary.json entry."""
    judge_maps, shown_above = judge.judge_maps, judge.shown_above
    confidence, resamples, seed = resampling.confidence, resampling.resamples, resampling.seed
    images = len(reference_map)
    if judge_maps is not None and not judge_maps:
        raise ValueError("judge_maps holds no view")
    for name, other in (("candidate's", candidate_map), *(("mirror images'", view) for view in judge_maps or ())):
        if len(other) != images:
            raise ValueError(f"{images} images of reference detections but {len(other)} of the {name}")
    kind = MIRRORED if judge_maps is not None else REFERENCE
    views = len(judge_maps) if judge_maps is not None else 1
    figure, thresholds = ("mAP@0.5:0.95", None) if kind == MIRRORED else ("mAP@0.5", AT_IOU_50)
    base = {"estimates": f"the {figure} drop against {stand_in(kind, shown_above, views, judge.reference)}",
            "figure": figure, "label_free_truth": kind, "judge_views": views, "budget": budget,
            "confidence": confidence, "images": images}
    truths = [pseudo_labels(view, shown_above) for view in (judge_maps if judge_maps is not None else [reference_map])]
    # Each view stands in for the same objects: the fewest any view shows is what the figures rest on.
    objects = min(sum(len(t.labels) for t in view) for view in truths)
    if images < MIN_IMAGES or objects == 0:
        why = (f"{images} image(s): the interval over images needs at least {MIN_IMAGES}" if images < MIN_IMAGES
               else "the reference shows no detection at the deployed threshold on these images, so there is "
                    "nothing to compare against")
        needed = MIN_IMAGES if images < MIN_IMAGES else None
        return dict(base, verdict=UNDECIDED, estimate=None, low=None, high=None, reason=why, images_needed=needed,
                    statement=f"undecided: {why}")
    drop = measured or drop_over_views(truths, reference_map, candidate_map, thresholds, resampling)
    estimate, low, high = drop.estimate, drop.low, drop.high
    # With one view its interval is the mean's, so this only bites where views disagree.
    number, lenient = drop.most_lenient()
    verdict = decide(estimate, low, high, budget)
    views_disagree = verdict == DIFFERENT and lenient.low <= budget
    if views_disagree:
        verdict = UNDECIDED
    entry = dict(base, verdict=verdict, estimate=estimate, low=low, high=high, stand_in_objects=objects,
                 resamples=resamples, seed=seed)
    if views > 1:
        entry["views"] = [{"view": n + 1, "estimate": one.estimate, "low": one.low, "high": one.high}
                          for n, one in enumerate(drop.views)]
    if views_disagree:
        entry["reason"] = (f"the {confidence:.0%} interval of the drop [{low:+.3f}, {high:+.3f}] lies above the budget "
                           f"{budget}, but view {number + 1}'s own reaches down to {lenient.low:+.3f}; a drop read "
                           "without labels errs high, so `different` must hold on every view")
        needed = (images_to_decide(images, lenient.estimate, lenient.low, lenient.high, budget)
                  if lenient.estimate > budget else None)
        entry["images_needed"] = needed
        entry["statement"] = (f"undecided: {entry['reason']}; about {needed} images would decide it" if needed else
                              f"undecided: {entry['reason']}, and that view's estimate is within the budget")
    elif verdict == WITHIN_BUDGET:
        entry["statement"] = f"mAP drop at most {max(high, 0.0):.3f} ({confidence:.0%}), within the budget {budget}"
    elif verdict == DIFFERENT:
        entry["statement"] = (f"mAP drop at least {min(low, lenient.low):.3f} ({confidence:.0%}), above the budget "
                              f"{budget}" + (f" on each of the {views} views" if views > 1 else ""))
    else:
        needed = images_to_decide(images, estimate, low, high, budget)
        entry["images_needed"] = needed
        entry["reason"] = (f"the {confidence:.0%} interval of the drop [{low:+.3f}, {high:+.3f}] contains the "
                           f"budget {budget}")
        entry["statement"] = (f"undecided: {entry['reason']}; about {needed} images would decide it"
                              if needed else f"undecided: {entry['reason']}, and its estimate sits on it")
    return entry
