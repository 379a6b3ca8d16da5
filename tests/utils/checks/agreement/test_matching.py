"""Agreement math: hand-computed cases, and slow pure-Python loops as independent references."""
import json
import math
import random

import pytest
import torch

from pipelines.contract import Detections
from pipelines.boxes.nms import NmsSettings, non_max_suppression
from pipelines.yolo.pipeline import YoloPipeline
from utils.checks.agreement.matching import (
    MatchCounts,
    MatchCriteria,
    RawError,
    VerdictThresholds,
    agreement_summary,
    box_iou,
    match_detections,
    raw_output_error,
    topk_threshold,
    verdict,
)


def dets(rows: list[tuple[float, float, float, float, float, int]]) -> Detections:
    """Detections from (x1, y1, x2, y2, score, label) rows."""
    if not rows:
        return Detections(torch.zeros(0, 4), torch.zeros(0), torch.zeros(0, dtype=torch.int64))
    return Detections(
        torch.tensor([row[:4] for row in rows], dtype=torch.float32),
        torch.tensor([row[4] for row in rows], dtype=torch.float32),
        torch.tensor([row[5] for row in rows], dtype=torch.int64),
    )


def counts(matches: MatchCounts) -> tuple[int, int, int, int]:
    return matches.reference, matches.candidate, matches.loose, matches.strict


# --- box_iou ---------------------------------------------------------------------------------------------

def test_box_iou_hand_cases():
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 4.0, 4.0]])
    b = torch.tensor([[1.0, 1.0, 3.0, 3.0], [0.0, 0.0, 2.0, 2.0], [2.0, 0.0, 4.0, 2.0]])
    expected = torch.tensor([
        # overlap 1x1 of two 2x2 boxes: 1 / (4 + 4 - 1); identical: 1; sharing only an edge: 0
        [1 / 7, 1.0, 0.0],
        # 2x2 boxes inside a 4x4 box: 4 / 16
        [4 / 16, 4 / 16, 4 / 16],
    ])
    torch.testing.assert_close(box_iou(a, b), expected.double())


def test_box_iou_mixed_precision_and_empty():
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0]])
    iou = box_iou(a.bfloat16(), torch.tensor([[1.0, 1.0, 3.0, 3.0]]))
    assert iou.dtype == torch.float64
    torch.testing.assert_close(iou, torch.tensor([[1 / 7]], dtype=torch.float64))
    assert box_iou(a, torch.zeros(0, 4)).shape == (1, 0)


def test_box_iou_between_zero_area_boxes_is_taken_at_a_pixel():
    # Lines along the top edge (a detection in the letterbox padding, clipped to the image) and a point.
    line = torch.tensor([[214.0, 0.0, 312.0, 0.0]])
    same_line = torch.tensor([[214.0, 0.0, 312.0, 0.0], [214.0001, 0.0, 312.0, 0.0]])
    shorter, elsewhere = torch.tensor([[214.0, 0.0, 263.0, 0.0]]), torch.tensor([[214.0, 300.0, 312.0, 300.0]])
    box = torch.tensor([[200.0, 0.0, 320.0, 40.0]])
    assert box_iou(line, same_line).tolist()[0][0] == 1.0
    assert box_iou(line, same_line)[0, 1] == pytest.approx(1.0, abs=1e-5)
    assert box_iou(line, shorter).item() == pytest.approx(49 / 98)  # 49 x 1 px over 98 x 1 px
    assert box_iou(line, elsewhere).item() == 0.0
    assert box_iou(line, box).item() == 0.0 and box_iou(box, line).item() == 0.0  # no area: no overlap
    point = torch.tensor([[5.0, 5.0, 5.0, 5.0]])
    assert box_iou(point, point).item() == 1.0
    assert not torch.isnan(box_iou(torch.cat((line, point, box)), torch.cat((elsewhere, point, line)))).any()


def test_identical_zero_area_detections_match():
    rows = [(214.0, 0.0, 312.0, 0.0, 0.3, 2), (0, 0, 10, 10, 0.9, 0)]
    assert counts(match_detections(dets(rows), dets(rows))) == (2, 2, 2, 2)


# --- match_detections ------------------------------------------------------------------------------------

REFERENCE = [
    (0, 0, 10, 10, 0.9, 0),
    (20, 20, 40, 40, 0.8, 1),
    (50, 0, 60, 20, 0.7, 2),
    (0, 50, 30, 60, 0.6, 0),
]


def test_identical_detections_match_strictly():
    matches = match_detections(dets(REFERENCE), dets(REFERENCE))
    assert counts(matches) == (4, 4, 4, 4)
    assert matches.strict_recall == matches.strict_precision == 1.0


def test_shifted_box_is_loose_not_strict():
    # shifted 2 px on a 10 px box: overlap 8 x 10 = 80, union 120, IoU 0.667
    loose = match_detections(dets([(0, 0, 10, 10, 0.9, 0)]), dets([(2, 0, 12, 10, 0.9, 0)]))
    assert counts(loose) == (1, 1, 1, 0)
    # shifted 0.5 px: overlap 95, union 105, IoU 0.905 >= 0.9
    strict = match_detections(dets([(0, 0, 10, 10, 0.9, 0)]), dets([(0.5, 0, 10.5, 10, 0.9, 0)]))
    assert counts(strict) == (1, 1, 1, 1)
    # 9 of 10 columns: IoU exactly 0.9 is strict (float32 would compute 0.89999998)
    assert counts(match_detections(dets([(0, 0, 10, 10, 0.9, 0)]), dets([(0, 0, 9, 10, 0.9, 0)]))) == (1, 1, 1, 1)
    # shifted 6 px: overlap 40, union 160, IoU 0.25 < 0.5
    assert counts(match_detections(dets([(0, 0, 10, 10, 0.9, 0)]), dets([(6, 0, 16, 10, 0.9, 0)]))) == (1, 1, 0, 0)


def test_swapped_class_does_not_match():
    candidate = [(0, 0, 10, 10, 0.9, 1)]
    matches = match_detections(dets([(0, 0, 10, 10, 0.9, 0)]), dets(candidate))
    assert counts(matches) == (1, 1, 0, 0)
    assert matches.loose_recall == matches.loose_precision == 0.0


def test_missing_and_extra_detections():
    # the third reference detection is missing; two detections nothing in the reference explains are added
    candidate = [REFERENCE[0], REFERENCE[1], REFERENCE[3], (100, 100, 120, 120, 0.5, 0), (0, 0, 10, 10, 0.4, 3)]
    matches = match_detections(dets(REFERENCE), dets(candidate))
    assert counts(matches) == (4, 5, 3, 3)
    assert matches.loose_recall == 3 / 4 and matches.loose_precision == 3 / 5
    assert matches.strict_recall == 3 / 4 and matches.strict_precision == 3 / 5


def test_duplicate_candidate_stays_unmatched():
    reference = [(0, 0, 10, 10, 0.9, 0)]
    matches = match_detections(dets(reference), dets(reference + reference))
    assert counts(matches) == (1, 2, 1, 1)
    assert matches.strict_recall == 1.0 and matches.strict_precision == 0.5


def test_references_are_served_by_descending_score():
    # Listed low score first: B (0.8) overlaps the only candidate exactly, A (0.9) at IoU 90 / 110 = 0.818.
    # A is served first and takes it (loose only), so B goes without.
    reference = [(1, 0, 11, 10, 0.8, 0), (0, 0, 10, 10, 0.9, 0)]
    matches = match_detections(dets(reference), dets([(1, 0, 11, 10, 0.9, 0)]))
    assert counts(matches) == (2, 1, 1, 0)


def test_reference_takes_its_highest_iou_candidate():
    # IoU 0.667 first in the list, exact copy second: the copy is taken, so the match is strict
    candidate = [(2, 0, 12, 10, 0.9, 0), (0, 0, 10, 10, 0.9, 0)]
    assert counts(match_detections(dets([(0, 0, 10, 10, 0.9, 0)]), dets(candidate))) == (1, 2, 1, 1)


def test_score_difference_against_tolerance():
    reference = dets([(0, 0, 10, 10, 0.5, 0)])
    # |0.5 - 0.511| = 0.011 > 0.01: loose only; |0.5 - 0.509| = 0.009: strict
    assert counts(match_detections(reference, dets([(0, 0, 10, 10, 0.511, 0)]))) == (1, 1, 1, 0)
    assert counts(match_detections(reference, dets([(0, 0, 10, 10, 0.509, 0)]))) == (1, 1, 1, 1)
    # exactly at the tolerance is within it (0.25 and 0.75 are exact in float32)
    at_tolerance = match_detections(reference, dets([(0, 0, 10, 10, 0.75, 0)]), score_tolerance=0.25)
    assert counts(at_tolerance) == (1, 1, 1, 1)


def test_empty_sides():
    nothing = match_detections(dets([]), dets([]))
    assert counts(nothing) == (0, 0, 0, 0)
    assert nothing.loose_recall == nothing.loose_precision == 1.0
    assert nothing.strict_recall == nothing.strict_precision == 1.0
    only_candidate = match_detections(dets([]), dets(REFERENCE[:2]))
    assert only_candidate.loose_recall == 1.0 and only_candidate.loose_precision == 0.0
    only_reference = match_detections(dets(REFERENCE[:2]), dets([]))
    assert only_reference.loose_recall == 0.0 and only_reference.loose_precision == 1.0


def test_counts_add_over_images():
    first = match_detections(dets(REFERENCE), dets(REFERENCE[:2]))  # 4 ref, 2 cand, 2 matched
    second = match_detections(dets([]), dets(REFERENCE[:1]))  # 0 ref, 1 cand
    total = sum([first, second], MatchCounts())
    assert counts(total) == (4, 3, 2, 2)
    assert total.loose_recall == 2 / 4 and total.loose_precision == 2 / 3
    other_criteria = match_detections(dets([]), dets([]), iou_threshold=0.7)
    with pytest.raises(ValueError, match="cannot add"):
        first + other_criteria


def slow_iou(a, b) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def slow_match(reference, candidate, iou_threshold, strict_iou, score_tolerance) -> tuple[int, int, int, int]:
    """The greedy rule written as the obvious loops over Python lists."""
    order = sorted(range(len(reference)), key=lambda i: -reference[i][4])  # sorted() is stable
    taken = [False] * len(candidate)
    loose = strict = 0
    for r in order:
        best, best_iou = None, -1.0
        for c in range(len(candidate)):
            if taken[c] or candidate[c][5] != reference[r][5]:
                continue
            iou = slow_iou(reference[r], candidate[c])
            if iou >= iou_threshold and iou > best_iou:
                best, best_iou = c, iou
        if best is None:
            continue
        taken[best] = True
        loose += 1
        if best_iou >= strict_iou and abs(reference[r][4] - candidate[best][4]) <= score_tolerance:
            strict += 1
    return len(reference), len(candidate), loose, strict


def random_rows(rng: random.Random, n: int) -> list[tuple[float, float, float, float, float, int]]:
    rows = []
    for _ in range(n):
        # dyadic coordinates and scores are exact in float32, so both implementations see the same numbers
        x, y = rng.randrange(0, 64) / 4, rng.randrange(0, 64) / 4
        w, h = rng.randrange(8, 40) / 4, rng.randrange(8, 40) / 4
        rows.append((x, y, x + w, y + h, rng.randrange(1, 256) / 256, rng.randrange(3)))
    return rows


@pytest.mark.parametrize("seed", range(40))
def test_matching_agrees_with_slow_loop(seed):
    rng = random.Random(seed)
    reference = random_rows(rng, rng.randrange(0, 15))
    # a candidate that perturbs, drops and adds to the reference, like a runtime that is nearly right
    candidate = [(x1 + rng.choice((0, 0.25, -0.5, 2)), y1, x2, y2 + rng.choice((0, 0.25, 1)),
                  score + rng.choice((0, 1 / 256, 1 / 64)), label if rng.random() > 0.1 else (label + 1) % 3)
                 for x1, y1, x2, y2, score, label in reference if rng.random() > 0.2]
    candidate += random_rows(rng, rng.randrange(0, 5))
    rng.shuffle(candidate)
    criteria = MatchCriteria(iou_threshold=0.5, strict_iou=0.9, score_tolerance=1 / 128)
    fast = match_detections(dets(reference), dets(candidate), criteria.iou_threshold, criteria.strict_iou,
                            criteria.score_tolerance)
    assert counts(fast) == slow_match(reference, candidate, criteria.iou_threshold, criteria.strict_iou,
                                      criteria.score_tolerance)
    assert fast.criteria == criteria


# --- raw output error ------------------------------------------------------------------------------------

def random_predictions(generator: torch.Generator, batch: int, rows: int, classes: int) -> torch.Tensor:
    boxes = torch.rand(batch, rows, 4, generator=generator) * 640
    probabilities = torch.rand(batch, rows, 1 + classes, generator=generator)
    return torch.cat((boxes, probabilities), dim=-1)


def test_yolo_candidate_scores_against_loop():
    pred = random_predictions(torch.Generator().manual_seed(1), 2, 30, 4)
    expected = [[row[4] * max(row[5:]) for row in image] for image in pred.double().tolist()]
    torch.testing.assert_close(YoloPipeline.candidate_scores(pred).double(), torch.tensor(expected, dtype=torch.float64))


def slow_raw_error(reference: torch.Tensor, candidate: torch.Tensor, top_k: int) -> tuple[float, float, int]:
    """Rank each image's rows by obj x max class in Python, then loop over the top_k rows' columns."""
    errors = []
    for ref_image, cand_image in zip(reference.double().tolist(), candidate.double().tolist()):
        scores = [row[4] * max(row[5:]) for row in ref_image]
        top = sorted(range(len(scores)), key=lambda i: -scores[i])[:top_k]
        for i in top:
            errors += [abs(c - r) for r, c in zip(ref_image[i], cand_image[i])]
    return max(errors), sum(errors) / len(errors), len(errors) // reference.shape[2]


@pytest.mark.parametrize("top_k", [1, 7, 40, 100])
def test_raw_error_top_k_against_loop(top_k):
    generator = torch.Generator().manual_seed(top_k)
    reference = random_predictions(generator, 3, 40, 5)
    candidate = (reference + torch.randn(reference.shape, generator=generator) * 0.01).bfloat16()
    raw = raw_output_error(reference, candidate, top_k, YoloPipeline.candidate_scores)
    expected_max, expected_mean, expected_rows = slow_raw_error(reference, candidate, top_k)
    assert raw.candidates == expected_rows == 3 * min(top_k, 40)
    assert raw.max_abs == pytest.approx(expected_max, rel=1e-12)
    assert raw.mean_abs == pytest.approx(expected_mean, rel=1e-9)


def test_raw_error_ignores_rows_outside_top_k():
    reference = torch.zeros(1, 3, 6)
    reference[0, :, 4] = torch.tensor([0.1, 0.9, 0.5])  # objectness
    reference[0, :, 5] = 1.0  # class probability
    candidate = reference.clone()
    candidate[0, 0, 0] += 100.0  # lowest-scoring row: outside the top 2
    candidate[0, 2, 1] += 0.25  # second-highest row: inside
    raw = raw_output_error(reference, candidate, 2, YoloPipeline.candidate_scores)
    assert raw == RawError(max_abs=0.25, mean_abs=0.25 / 12, candidates=2)


def test_raw_error_batches_add_up_to_whole():
    generator = torch.Generator().manual_seed(5)
    reference = random_predictions(generator, 4, 25, 3)
    candidate = reference + torch.randn(reference.shape, generator=generator)
    whole = raw_output_error(reference, candidate, 6, YoloPipeline.candidate_scores)
    parts = (raw_output_error(reference[:1], candidate[:1], 6, YoloPipeline.candidate_scores)
             + raw_output_error(reference[1:], candidate[1:], 6, YoloPipeline.candidate_scores))
    assert parts.candidates == whole.candidates == 24
    assert parts.max_abs == whole.max_abs
    assert parts.mean_abs == pytest.approx(whole.mean_abs, rel=1e-12)


def test_raw_error_non_finite():
    reference = torch.zeros(1, 2, 6)
    reference[0, :, 4:] = 1.0
    reference[0, 0, 2] = math.inf
    same_infinity = raw_output_error(reference, reference.clone(), 2, YoloPipeline.candidate_scores)
    assert same_infinity.max_abs == 0.0
    candidate = reference.clone()
    candidate[0, 1, 0] = math.nan
    broken = raw_output_error(reference, candidate, 2, YoloPipeline.candidate_scores)
    assert math.isnan(broken.max_abs)
    assert math.isnan((RawError(1.0, 1.0, 1) + broken).max_abs)


def test_raw_error_refuses_bad_input():
    with pytest.raises(ValueError, match="one shape"):
        raw_output_error(torch.zeros(1, 5, 6), torch.zeros(1, 4, 6), 2, YoloPipeline.candidate_scores)
    with pytest.raises(ValueError, match="top_k"):
        raw_output_error(torch.zeros(1, 5, 6), torch.zeros(1, 5, 6), 0, YoloPipeline.candidate_scores)
    with pytest.raises(ValueError, match="no predictions"):
        raw_output_error(torch.zeros(0, 5, 6), torch.zeros(0, 5, 6), 2, YoloPipeline.candidate_scores)


# --- topk_threshold --------------------------------------------------------------------------------------

SCORES = torch.tensor([[0.9, 0.1, 0.8, 0.7], [0.375, 0.5, 0.25, 0.625]])


def test_topk_threshold_crafted():
    # 2nd largest: 0.8 in image 0, 0.5 in image 1; the lower, one float32 step down
    just_below_half = float(torch.nextafter(torch.tensor(0.5), torch.tensor(0.0)))
    assert 0.4999999 < just_below_half < 0.5
    assert topk_threshold(SCORES, 2, conf_thres=0.9) == just_below_half
    assert topk_threshold(SCORES, 2, conf_thres=0.25) == 0.25  # the configured threshold is already lower
    # k beyond N: every row, so the smallest score (0.1) one step down
    just_below_smallest = float(torch.nextafter(torch.tensor(0.1), torch.tensor(0.0)))
    assert topk_threshold(SCORES, 10, conf_thres=0.9) == just_below_smallest
    with pytest.raises(ValueError, match="k must"):
        topk_threshold(SCORES, 0, conf_thres=0.25)


def test_topk_threshold_makes_nms_keep_k():
    # Disjoint boxes, class probability 1, so score = objectness and NMS suppresses nothing.
    batch, rows = SCORES.shape
    pred = torch.zeros(batch, rows, 6)
    pred[..., 0] = torch.arange(rows, dtype=torch.float32) * 100 + 50
    pred[..., 1:4] = torch.tensor([50.0, 20.0, 20.0])
    pred[..., 4] = SCORES
    pred[..., 5] = 1.0
    threshold = topk_threshold(YoloPipeline.candidate_scores(pred), 2, conf_thres=0.9)
    kept = [len(image) for image in non_max_suppression(pred, NmsSettings(conf_thres=threshold))]
    assert kept == [3, 2]  # image 0 has three scores above 0.5, image 1 exactly k
    assert [len(image) for image in non_max_suppression(pred, NmsSettings(conf_thres=0.5))] == [3, 1]  # why the step down


# --- verdict and summary ---------------------------------------------------------------------------------

SHIFTED = [(x1 + 2, y1, x2 + 2, y2, score, label) for x1, y1, x2, y2, score, label in REFERENCE]
SWAPPED = [(x1, y1, x2, y2, score, label + 1) for x1, y1, x2, y2, score, label in REFERENCE]
SMALL_RAW = RawError(max_abs=0.1, mean_abs=0.01, candidates=300)


def test_verdict_equal_close_different():
    identical = match_detections(dets(REFERENCE), dets(REFERENCE))
    shifted = match_detections(dets(REFERENCE), dets(SHIFTED))
    swapped = match_detections(dets(REFERENCE), dets(SWAPPED))
    assert counts(shifted) == (4, 4, 4, 0)  # every box moved 2 px: IoU 0.67 to 0.88
    assert verdict(identical, SMALL_RAW) == "equal"
    assert verdict(shifted, SMALL_RAW) == "close"
    assert verdict(swapped, SMALL_RAW) == "different"


def test_verdict_needs_small_raw_error_for_equal():
    identical = match_detections(dets(REFERENCE), dets(REFERENCE))
    assert verdict(identical, RawError(0.5, 0.1, 300)) == "equal"
    assert verdict(identical, RawError(0.6, 0.1, 300)) == "close"
    # no detections at all: only the raw error can tell
    nothing = match_detections(dets([]), dets([]))
    assert verdict(nothing, SMALL_RAW) == "equal"
    assert verdict(nothing, RawError(3.0, 0.5, 300)) == "close"
    assert verdict(nothing, RawError(math.nan, math.nan, 300)) == "different"


def test_verdict_cut_offs_at_their_bounds():
    thresholds = VerdictThresholds()
    # 99 of 100 strict is still equal; 98 of 100 falls back to close when loose is good
    assert verdict(MatchCounts(100, 100, 100, 99), SMALL_RAW, thresholds) == "equal"
    assert verdict(MatchCounts(100, 100, 100, 98), SMALL_RAW, thresholds) == "close"
    assert verdict(MatchCounts(100, 111, 100, 100), SMALL_RAW, thresholds) == "close"  # precision 0.9009
    assert verdict(MatchCounts(100, 100, 89, 89), SMALL_RAW, thresholds) == "different"


def test_summary_states_counts_errors_and_thresholds():
    matches = match_detections(dets(REFERENCE), dets(REFERENCE[:3] + [(100, 100, 120, 120, 0.5, 0)]))
    summary = agreement_summary(matches, SMALL_RAW, VerdictThresholds(), reference="torch fp32",
                                candidate="onnxruntime fp32", conf_thres=0.001)
    assert summary == {
        "reference": "torch fp32",
        "candidate": "onnxruntime fp32",
        "conf_thres": 0.001,
        "verdict": "different",
        "reference_detections": 4,
        "candidate_detections": 4,
        "loose": {"matches": 3, "recall": 0.75, "precision": 0.75},
        "strict": {"matches": 3, "recall": 0.75, "precision": 0.75},
        "raw_output": {"max_abs": 0.1, "mean_abs": 0.01, "candidates": 300},
        "thresholds": {
            "iou_threshold": 0.5, "strict_iou": 0.9, "score_tolerance": 0.01,
            "equal_min_recall": 0.99, "equal_min_precision": 0.99, "equal_max_raw_abs": 0.5,
            "close_min_recall": 0.9, "close_min_precision": 0.9,
        },
    }


def test_summary_is_strict_json_and_keeps_its_keys():
    matches = match_detections(dets([]), dets([]))
    summary = agreement_summary(matches, RawError(math.nan, math.nan, 10))
    json.dumps(summary, allow_nan=False)
    assert summary["raw_output"] == {"max_abs": None, "mean_abs": None, "candidates": 10}
    assert summary["verdict"] == "different"
    with pytest.raises(ValueError, match="verdict"):
        agreement_summary(matches, SMALL_RAW, verdict="equal")
