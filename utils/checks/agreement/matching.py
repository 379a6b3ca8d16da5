"""Do a run's detections equal the torch fp32 reference's? The math behind that answer, as plain functions.

When a run uses anything but torch fp32 (ONNX Runtime, OpenVINO, bf16, ...), the harness also computes the
torch fp32 reference on the same images and judges the candidate two ways:

- detections: one-to-one matching of the candidate's detections to the reference's, per image
  (`match_detections`), summed over images into recall and precision;
- raw output: the absolute error of the network's raw predictions over the rows that matter
  (`raw_output_error`).

`verdict` turns both into "equal", "close" or "different"; `agreement_summary` is the summary.json entry,
thresholds included so the file states what was judged against.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import torch

from pipelines.boxes import kernels as box_kernels

EQUAL = "equal"
CLOSE = "close"
DIFFERENT = "different"


class DetectionsLike(Protocol):
    """What matching reads from one image's detections (pipelines.contract.Detections has it)."""

    boxes: torch.Tensor  # (N, 4) x1 y1 x2 y2
    scores: torch.Tensor  # (N,)
    labels: torch.Tensor  # (N,) class ids


def _at_least_a_pixel(boxes: torch.Tensor) -> torch.Tensor:
    """Each side of zero length widened to one pixel about its centre."""
    centre = (boxes[:, :2] + boxes[:, 2:]) / 2
    flat = (boxes[:, 2:] - boxes[:, :2]) <= 0
    return torch.cat((torch.where(flat, centre - 0.5, boxes[:, :2]), torch.where(flat, centre + 0.5, boxes[:, 2:])),
                     dim=1)


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(N, 4) and (M, 4) x1y1x2y2 boxes -> (N, M) float64 intersection over union.

    float64 because matching compares IoU with thresholds such as 0.9: an overlap of exactly 9/10 computes
    as 0.9 in float64 but as 0.89999998 in float32. Any float input (a bf16 candidate, an fp32 reference)
    converts to it exactly.

    Two boxes of zero area (a detection in the letterbox padding, clipped to the image edge, is a line or a
    point) have no union: 0/0 would leave the same detection on both sides unmatched. Between two such boxes
    the IoU is taken at one pixel's resolution, each zero-length side widened to a pixel. A zero-area box
    against a box with area keeps IoU 0.
    """
    a, b = a.double(), b.double()
    iou = box_kernels.box_iou(a, b)
    flat_a = (a[:, 2:] - a[:, :2]).prod(dim=1) <= 0
    flat_b = (b[:, 2:] - b[:, :2]).prod(dim=1) <= 0
    both = flat_a[:, None] & flat_b[None, :]
    if both.any():
        iou = torch.where(both, box_kernels.box_iou(_at_least_a_pixel(a), _at_least_a_pixel(b)), iou)
    return iou


@dataclass(frozen=True)
class MatchCriteria:
    """When a matched pair counts: loose at IoU >= iou_threshold (the usual detection-metric bar), strict
    when the box also overlaps almost entirely and the score is nearly the same."""

    iou_threshold: float = 0.5
    strict_iou: float = 0.9
    score_tolerance: float = 0.01


DEFAULT_CRITERIA = MatchCriteria()


def _ratio(matches: int, total: int) -> float:
    # An empty denominator means nothing to miss (recall) or nothing claimed wrongly (precision).
    return matches / total if total else 1.0


@dataclass(frozen=True)
class MatchCounts:
    """Detection counts of one image or, added together, of many.

    recall = matches / reference detections; precision = matches / candidate detections, for loose and strict
    matches alike. A zero denominator gives 1.0: with no detections on either side both are 1.0, with no
    reference detections but some candidate ones recall is 1.0 and precision is 0.0, and with reference
    detections but no candidate ones recall is 0.0 and precision 1.0.

    The criteria travel with the counts so summary.json states the ones really used, and counts made under
    different criteria refuse to add up. `MatchCounts()` is the zero to start a sum from under the default
    criteria.
    """

    reference: int = 0
    candidate: int = 0
    loose: int = 0
    strict: int = 0
    criteria: MatchCriteria = field(default=DEFAULT_CRITERIA)

    def __add__(self, other: MatchCounts) -> MatchCounts:
        if not isinstance(other, MatchCounts):
            return NotImplemented
        if other.criteria != self.criteria:
            raise ValueError(f"cannot add match counts made under {self.criteria} and {other.criteria}")
        return MatchCounts(
            self.reference + other.reference,
            self.candidate + other.candidate,
            self.loose + other.loose,
            self.strict + other.strict,
            self.criteria,
        )

    @property
    def loose_recall(self) -> float:
        return _ratio(self.loose, self.reference)

    @property
    def loose_precision(self) -> float:
        return _ratio(self.loose, self.candidate)

    @property
    def strict_recall(self) -> float:
        return _ratio(self.strict, self.reference)

    @property
    def strict_precision(self) -> float:
        return _ratio(self.strict, self.candidate)


def match_detections(
    reference: DetectionsLike,
    candidate: DetectionsLike,
    iou_threshold: float = DEFAULT_CRITERIA.iou_threshold,
    strict_iou: float = DEFAULT_CRITERIA.strict_iou,
    score_tolerance: float = DEFAULT_CRITERIA.score_tolerance,
) -> MatchCounts:
    """Match one image's candidate detections to its reference detections, one to one.

    References are visited by descending score (ties in their given order); each takes, among the candidates
    of its class that no earlier reference took and that overlap it with IoU >= iou_threshold, the one with
    the highest IoU (ties: the lowest index). Every such pair is a loose match; it is also strict when
    IoU >= strict_iou and |score difference| <= score_tolerance. A second candidate on the same object stays
    unmatched and lowers precision.
    """
    criteria = MatchCriteria(iou_threshold, strict_iou, score_tolerance)
    order = torch.sort(reference.scores, descending=True, stable=True).indices
    iou = box_iou(reference.boxes[order], candidate.boxes)
    eligible = (iou >= iou_threshold) & (reference.labels[order, None] == candidate.labels[None, :])
    rows, cols = eligible.nonzero(as_tuple=True)
    # Sorting the eligible pairs by (reference rank, -IoU, candidate index) replays the greedy visit, so one
    # pass that skips taken rows and columns finds the same matches as looping over all pairs per reference.
    pairs = sorted(zip(rows.tolist(), (-iou[rows, cols]).tolist(), cols.tolist()))
    reference_scores = reference.scores[order].double().tolist()
    candidate_scores = candidate.scores.double().tolist()
    matched_rows: set[int] = set()
    taken_cols: set[int] = set()
    strict = 0
    for row, negative_iou, col in pairs:
        if row in matched_rows or col in taken_cols:
            continue
        matched_rows.add(row)
        taken_cols.add(col)
        score_difference = abs(reference_scores[row] - candidate_scores[col])
        if -negative_iou >= strict_iou and score_difference <= score_tolerance:
            strict += 1
    return MatchCounts(len(reference.scores), len(candidate.scores), len(matched_rows), strict, criteria)


@dataclass(frozen=True)
class RawError:
    """Absolute error of raw predictions over `candidates` rows (all their columns). Add the RawErrors of
    batches to get the run's: the max of the maxima and the mean weighted by rows (every row has the same
    number of columns within a run)."""

    max_abs: float
    mean_abs: float
    candidates: int

    def __add__(self, other: RawError) -> RawError:
        if not isinstance(other, RawError):
            return NotImplemented
        rows = self.candidates + other.candidates
        mean = (self.mean_abs * self.candidates + other.mean_abs * other.candidates) / rows if rows else 0.0
        # Python's max() drops a NaN depending on argument order; a NaN error must survive the sum.
        largest = math.nan if math.isnan(self.max_abs) or math.isnan(other.max_abs) else max(
            self.max_abs, other.max_abs)
        return RawError(largest, mean, rows)


def raw_output_error(
    reference: torch.Tensor,
    candidate: torch.Tensor,
    top_k: int,
    score_fn: Callable[[torch.Tensor], torch.Tensor],
) -> RawError:
    """Absolute error of (B, N, D) raw predictions over each image's top_k rows by the REFERENCE score.

    With random weights almost no box clears conf_thres, so the detections alone say little, and the error
    over all N rows is dominated by thousands of background rows no one would ever see. The rows that would
    become detections are the ones with the highest scores, so errors (like detections, see `topk_threshold`)
    are judged over those. Ranking by the reference alone keeps the same rows whatever the candidate did.
    Every column of those rows counts: box coordinates in pixels, objectness and class probabilities, so
    max_abs is in practice a pixel figure. Both tensors are compared in float64; a bf16 candidate converts
    to it exactly. Values equal on both sides (including equal infinities) count as zero error.
    """
    if reference.dim() != 3 or reference.shape != candidate.shape:
        raise ValueError(f"need two (B, N, D) tensors of one shape, got {tuple(reference.shape)} "
                         f"and {tuple(candidate.shape)}")
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}")
    batch, rows, columns = reference.shape
    if batch == 0 or rows == 0 or columns == 0:
        raise ValueError(f"no predictions to compare in a {tuple(reference.shape)} tensor")
    k = min(top_k, rows)
    # Stable, so that rows with equal scores are chosen the same way every run.
    top = torch.sort(score_fn(reference), dim=1, descending=True, stable=True).indices[:, :k]
    index = top.unsqueeze(-1).expand(-1, -1, columns)
    reference_rows = reference.gather(1, index).double()
    candidate_rows = candidate.gather(1, index).double()
    error = torch.where(reference_rows == candidate_rows, 0.0, (candidate_rows - reference_rows).abs())
    return RawError(float(error.max()), float(error.mean()), batch * k)


def topk_threshold(reference_scores: torch.Tensor, k: int, conf_thres: float) -> float:
    """Score threshold at which NMS on the reference sees at least k candidates in every image.

    Returns min(conf_thres, the k-th largest score of each (B, N) image, lowest over the images), with the
    k-th score stepped down to the next value representable in the scores' dtype because NMS drops
    score == threshold. Running NMS on reference and candidate at this one threshold gives both something to
    match even with random weights; with real weights conf_thres is usually the lower and stands. NMS itself
    may then suppress overlapping candidates, so "at least k" holds before suppression. k above N means all N.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if reference_scores.dim() != 2 or reference_scores.numel() == 0:
        raise ValueError(f"need a non-empty (B, N) tensor of scores, got {tuple(reference_scores.shape)}")
    kth_largest = reference_scores.topk(min(k, reference_scores.shape[1]), dim=1).values[:, -1].min()
    just_below = torch.nextafter(kth_largest, torch.tensor(-math.inf, dtype=kth_largest.dtype))
    return min(conf_thres, float(just_below))


@dataclass(frozen=True)
class VerdictThresholds:
    """Cut-offs between "equal", "close" and "different".

    equal: strict recall and precision >= 0.99 and raw max_abs <= 0.5. Not 1.0, because a detection whose
    score sits on the NMS threshold, or two near-identical overlapping boxes, can flip with rounding noise
    alone; one such flip in a hundred detections does not make a runtime numerically different. The raw bar
    is in pixels in practice (box coordinates dominate max_abs): an error under half a pixel of the network's
    input moves no box edge by a whole pixel, fp32 runtimes that only reorder sums stay far below it, and
    without it a run with no detections on either side would be "equal" on detections alone.

    close: loose recall and precision >= 0.9 (same objects, same classes, boxes overlapping at IoU >= 0.5,
    nine in ten times), what reduced precision such as bf16 is expected to reach.
    """

    equal_min_recall: float = 0.99
    equal_min_precision: float = 0.99
    equal_max_raw_abs: float = 0.5
    close_min_recall: float = 0.9
    close_min_precision: float = 0.9


def verdict(matches: MatchCounts, raw: RawError, thresholds: VerdictThresholds = VerdictThresholds()) -> str:
    """"equal", "close" or "different" (see VerdictThresholds). A non-finite raw error (the candidate produced
    NaN or infinity where the reference did not) is "different": the outputs cannot be compared."""
    if not math.isfinite(raw.max_abs):
        return DIFFERENT
    if (matches.strict_recall >= thresholds.equal_min_recall
            and matches.strict_precision >= thresholds.equal_min_precision
            and raw.max_abs <= thresholds.equal_max_raw_abs):
        return EQUAL
    if (matches.loose_recall >= thresholds.close_min_recall
            and matches.loose_precision >= thresholds.close_min_precision):
        return CLOSE
    return DIFFERENT


def _json_number(value: float) -> float | None:
    # Strict JSON has no NaN or Infinity; null in summary.json says the error was not finite.
    return value if math.isfinite(value) else None


def agreement_summary(
    matches: MatchCounts,
    raw: RawError,
    thresholds: VerdictThresholds = VerdictThresholds(),
    **context: Any,
) -> dict[str, Any]:
    """The summary.json entry: `context` first (e.g. what the reference and the candidate were, the NMS
    threshold used), then the verdict, the counts, recall and precision, the raw error and every threshold
    the verdict was judged against."""
    summary: dict[str, Any] = {
        "verdict": verdict(matches, raw, thresholds),
        "reference_detections": matches.reference,
        "candidate_detections": matches.candidate,
        "loose": {"matches": matches.loose, "recall": matches.loose_recall,
                  "precision": matches.loose_precision},
        "strict": {"matches": matches.strict, "recall": matches.strict_recall,
                   "precision": matches.strict_precision},
        "raw_output": {"max_abs": _json_number(raw.max_abs), "mean_abs": _json_number(raw.mean_abs),
                       "candidates": raw.candidates},
        "thresholds": {**asdict(matches.criteria), **asdict(thresholds)},
    }
    clashes = sorted(summary.keys() & context.keys())
    if clashes:
        raise ValueError(f"context keys {clashes} would overwrite the agreement's own")
    return {**context, **summary}
