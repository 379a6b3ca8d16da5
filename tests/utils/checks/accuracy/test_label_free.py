"""The label-free verdict: hand-made detections whose answer is known, the bad inputs, and how the run's
verdict takes it."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

import torch

from pipelines.contract import Detections
from utils.checks.accuracy.coco_map import map_drop_interval
from utils.config.schema import AccuracySection
from utils.checks.accuracy.label_free import (DIFFERENT, JUDGE_VIEWS, UNDECIDED, VIEW_PAD_VALUE, WITHIN_BUDGET, Interval,
                                              JudgeView, StandInJudge, ViewedDrop, drop_over_views, from_view,
                                              images_to_decide, label_free_verdict, mirror_image, mirrored_back,
                                              pseudo_labels, view_image)
from utils.checks.verdict import apply_budget, verdict_warnings


@dataclass
class Found:
    boxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


def scene(seed: int, objects: int = 6) -> Found:
    """Objects shown above 0.25 plus low-score clutter, as a detector at conf 0.001 gives them."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0, 400, (2, objects + 10))
    boxes = np.stack([x, y, x + rng.uniform(20, 60, objects + 10), y + rng.uniform(20, 60, objects + 10)], axis=1)
    scores = np.concatenate([rng.uniform(0.5, 0.95, objects), rng.uniform(0.001, 0.2, 10)])
    return Found(boxes, scores, rng.choice([0, 2, 7], objects + 10))


def without(found: Found, every: int) -> Found:
    keep = np.arange(len(found.scores)) % every != 0
    return Found(found.boxes[keep], found.scores[keep], found.labels[keep])


REFERENCE = [scene(seed) for seed in range(40)]


def test_the_same_detections_are_within_budget_with_a_stated_bound():
    result = label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25), 0.01)
    assert result["verdict"] == WITHIN_BUDGET
    assert result["estimate"] == 0.0 and result["low"] == 0.0 and result["high"] == 0.0
    assert result["statement"] == "mAP drop at most 0.000 (95%), within the budget 0.01"
    assert result["images"] == 40 and result["stand_in_objects"] == 240


def test_losing_a_third_of_what_users_see_is_different():
    candidate = [without(found, 3) for found in REFERENCE]
    result = label_free_verdict(REFERENCE, candidate, StandInJudge(0.25), 0.01)
    assert result["verdict"] == DIFFERENT and result["low"] > 0.2
    assert 0.2 < result["low"] <= result["estimate"] <= result["high"]  # the candidate lost, so the drop is positive
    assert result["statement"].startswith("mAP drop at least")
    # Losing only clutter below the deployed threshold, ranked after every shown object, costs nothing.
    quiet = [Found(f.boxes[f.scores > 0.25], f.scores[f.scores > 0.25], f.labels[f.scores > 0.25]) for f in REFERENCE]
    assert label_free_verdict(REFERENCE, quiet, StandInJudge(0.25), 0.01)["verdict"] == WITHIN_BUDGET


def test_a_small_loss_near_the_budget_is_undecided_with_the_images_it_needs():
    candidate = [without(found, 2) if index == 0 else found for index, found in enumerate(REFERENCE)]
    result = label_free_verdict(REFERENCE, candidate, StandInJudge(0.25), 0.01)
    assert result["verdict"] == UNDECIDED
    assert result["low"] <= 0.01 <= result["high"]
    assert "contains the budget 0.01" in result["reason"] and result["images_needed"] > 40


def test_nothing_shown_and_too_few_images_are_undecided_without_nan():
    empty = [Found(np.zeros((0, 4)), np.zeros(0), np.zeros(0, dtype=np.int64)) for _ in range(40)]
    result = label_free_verdict(empty, empty, StandInJudge(0.25), 0.01)
    assert result["verdict"] == UNDECIDED and result["estimate"] is None
    assert "no detection at the deployed threshold" in result["reason"]
    # The same detections, yet too few images.
    few = label_free_verdict(REFERENCE[:8], REFERENCE[:8], StandInJudge(0.25), 0.01)
    assert few["verdict"] == UNDECIDED and "8 image(s)" in few["reason"] and "at least 30" in few["reason"]
    assert few["images_needed"] == 30 and result["images_needed"] is None  # more images help only the first
    one = few
    for entry in (result, one):
        assert not any(isinstance(v, float) and math.isnan(v) for v in entry.values())
    with pytest.raises(ValueError, match="40 images of reference detections but 39"):
        label_free_verdict(REFERENCE, REFERENCE[1:], StandInJudge(0.25), 0.01)


def test_a_budget_of_zero_allows_only_no_drop():
    assert label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25), 0.0)["verdict"] == WITHIN_BUDGET
    candidate = [without(found, 3) for found in REFERENCE]
    assert label_free_verdict(REFERENCE, candidate, StandInJudge(0.25), 0.0)["verdict"] == DIFFERENT


def test_zero_area_boxes_and_low_scores_are_no_pseudo_objects():
    found = Found(np.array([[0, 0, 10, 10], [5, 0, 30, 0], [0, 0, 5, 5]], float), np.array([0.9, 0.8, 0.1]),
                  np.array([0, 0, 0]))
    assert pseudo_labels([found], 0.25)[0].boxes.tolist() == [[0, 0, 10, 10]]


def test_images_to_decide_scales_with_the_square_of_the_spread():
    # half-width 0.01 at 100 images, 0.005 from the budget: four times the images halve it
    assert images_to_decide(100, 0.005, -0.005, 0.015, 0.01) == 400
    assert images_to_decide(100, 0.01, 0.0, 0.02, 0.01) is None


def test_the_run_verdict_follows_the_label_free_one_unless_equal():
    free = label_free_verdict(REFERENCE, [without(found, 3) for found in REFERENCE], StandInJudge(0.25), 0.01)
    agreement = {"verdict": "close", "strict": {"recall": 0.5}}
    accuracy = {"drop": {"map_50_95": 0.3, "against": "reference"}, "label_free": free}
    graded = apply_budget(agreement, accuracy, 0.01)
    assert graded["verdict"] == DIFFERENT and graded["detections_verdict"] == "close"
    assert graded["accuracy_drop"]["map_50"] == free["estimate"] and graded["label_free"] == free
    assert "without labels: mAP drop at least" in verdict_warnings(graded)[0]
    assert apply_budget(dict(agreement, verdict="equal"), accuracy, 0.01)["verdict"] == "equal"
    undecided = label_free_verdict(REFERENCE[:1], REFERENCE[:1], StandInJudge(0.25), 0.01)
    graded = apply_budget(agreement, dict(accuracy, label_free=undecided), 0.01)
    assert graded["verdict"] == UNDECIDED and graded["accuracy_drop"]["interval"] is None
    assert "UNDECIDED" in verdict_warnings(graded)[0]


def test_labels_of_crowds_alone_give_no_drop_and_leave_the_verdict_to_the_detections():
    from datasets.labels import GroundTruth, ImageTruth
    from utils.checks.accuracy.accuracy_pass import PassDetections, Scoring, evaluate
    found = scene(3)
    crowds = ImageTruth(found.boxes, found.labels.astype(np.int64), np.ones(len(found.labels), bool))
    truth = GroundTruth("t.json", "coco", "category id = model label id", (crowds,), 0)
    result = evaluate(PassDetections([without(found, 2)], [found]), truth, ["a", "b", "c"],
                      Scoring({}, 0.25, 50, 0, "torch fp32", max_drop=0.01)).summary
    assert "drop" not in result and "label_free" not in result and result["map_50_95"] is None
    assert "only 16 iscrowd region(s)" in result["not_scored"]


def jittered(found: Found, pixels: float, seed: int) -> Found:
    """The same detections with every box corner moved by up to `pixels` (what another view of an image, or
    another runtime, does to a box)."""
    rng = np.random.default_rng(seed)
    return Found(found.boxes + rng.uniform(-pixels, pixels, found.boxes.shape), found.scores, found.labels)


def test_against_the_mirror_view_a_candidate_as_good_as_the_reference_reads_no_drop():
    # Three views of the same objects, each off the truth by its own 3 px: the reference, its mirror view and
    # a candidate as good as the reference.
    reference = [jittered(found, 3, seed) for seed, found in enumerate(REFERENCE)]
    mirror = [jittered(found, 3, 100 + seed) for seed, found in enumerate(REFERENCE)]
    candidate = [jittered(found, 3, 200 + seed) for seed, found in enumerate(REFERENCE)]
    result = label_free_verdict(reference, candidate, StandInJudge(0.25, [mirror]), 0.01)
    assert result["figure"] == "mAP@0.5:0.95" and result["label_free_truth"] == "mirrored"
    assert "mirror images" in result["estimates"]
    assert result["low"] <= 0.0 <= result["high"], result
    # Scored at 0.5:0.95 against the reference's own boxes, the same candidate reads as a large drop: the
    # reference is exact against itself, so only the candidate's 3 px fail the high IoU thresholds.
    itself = map_drop_interval(pseudo_labels(reference, 0.25), reference, candidate, resamples=50)
    assert itself.low > 0.05 and abs(result["estimate"]) < itself.low / 4


def test_against_the_mirror_view_boxes_worse_than_the_references_are_a_drop_that_iou_50_misses():
    reference = [jittered(found, 3, seed) for seed, found in enumerate(REFERENCE)]
    mirror = [jittered(found, 3, 100 + seed) for seed, found in enumerate(REFERENCE)]
    sloppy = [jittered(found, 7, 200 + seed) for seed, found in enumerate(REFERENCE)]
    result = label_free_verdict(reference, sloppy, StandInJudge(0.25, [mirror]), 0.01)
    assert result["verdict"] == DIFFERENT and result["low"] > 0.05, result
    # The reference-only stand-in scores IoU 0.5, which 7 px on boxes of 20-60 px mostly still pass.
    assert label_free_verdict(reference, sloppy, StandInJudge(0.25), 0.01)["estimate"] < result["low"] / 2


def test_against_the_mirror_view_losing_what_users_see_is_different_and_nothing_changed_is_zero():
    mirror = [jittered(found, 3, seed) for seed, found in enumerate(REFERENCE)]
    lost = label_free_verdict(REFERENCE, [without(f, 3) for f in REFERENCE], StandInJudge(0.25, [mirror]), 0.01)
    assert lost["verdict"] == DIFFERENT and lost["low"] > 0.1
    same = label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25, [mirror]), 0.01)
    assert same["estimate"] == 0.0 and same["high"] == 0.0 and same["verdict"] == WITHIN_BUDGET
    with pytest.raises(ValueError, match="40 images of reference detections but 39 of the mirror images'"):
        label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25, [mirror[1:]]), 0.01)


def test_mirrored_back_puts_boxes_where_they_are_on_the_image():
    image = np.arange(2 * 5 * 3, dtype=np.uint8).reshape(2, 5, 3)
    flipped = mirror_image(image)
    assert flipped.flags["C_CONTIGUOUS"] and (flipped[:, 0] == image[:, 4]).all()
    # A box over columns 1..2 of a 5-pixel-wide image (x from 1 to 3) covers columns 2..3 of its mirror image.
    on_mirror = Detections(torch.tensor([[2.0, 0.0, 4.0, 2.0]]), torch.tensor([0.9]), torch.tensor([3]),
                           torch.tensor([[[0, 0, 1, 1, 0], [0, 0, 1, 1, 0]]], dtype=torch.bool))
    back = mirrored_back(on_mirror, 5)
    assert back.boxes.tolist() == [[1.0, 0.0, 3.0, 2.0]] and back.labels.tolist() == [3]
    assert back.masks[0, 0].tolist() == [False, True, True, False, False]
    assert on_mirror.boxes.tolist() == [[2.0, 0.0, 4.0, 2.0]]  # the input is left as it was


def test_a_shifted_mirror_view_and_its_boxes_mapped_back():
    image = np.arange(10 * 20 * 3, dtype=np.uint8).reshape(10, 20, 3) % 100
    view = JudgeView(0.05, 0.05)  # 1 pixel of the longer side (20) on the left and on the top
    assert view.offsets(10, 20) == (1, 1)
    shown = view_image(image, view)
    # padded to 11 x 21, then flipped: pixel (row 3, column 2) lands on row 4, column 21 - 1 - 3 = 17
    assert shown.shape == (11, 21, 3) and (shown[4, 17] == image[3, 2]).all()
    # the padding: the top row and, after the flip, the rightmost column
    assert (shown[0] == VIEW_PAD_VALUE).all() and (shown[:, 20] == VIEW_PAD_VALUE).all()
    # an object over x 2..5, y 3..6 of the image is at x 15..18, y 4..7 of the view
    on_view = Detections(torch.tensor([[15.0, 4.0, 18.0, 7.0]]), torch.tensor([0.9]), torch.tensor([1]))
    back = from_view(on_view, view, 10, 20)
    assert back.boxes.tolist() == [[2.0, 3.0, 5.0, 6.0]] and back.labels.tolist() == [1]
    # the plain mirror view is the mirror image
    assert (view_image(image, JUDGE_VIEWS[0]) == mirror_image(image)).all()
    assert from_view(on_view, JUDGE_VIEWS[0], 11, 21).boxes.tolist() == mirrored_back(on_view, 21).boxes.tolist()


def test_a_masks_crop_follows_the_view():
    view = JudgeView(0.0, 0.25)  # 1 pixel on the top of a 3 x 4 image
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[0, 1, 0] = True  # on the view: row 1, column 0, which is row 0, column 3 of the image
    back = from_view(Detections(torch.tensor([[0.0, 1.0, 1.0, 2.0]]), torch.tensor([0.9]), torch.tensor([0]), mask),
                     view, 3, 4)
    assert back.masks.shape == (1, 3, 4) and back.masks[0].nonzero().tolist() == [[0, 3]]
    assert back.boxes.tolist() == [[3.0, 0.0, 4.0, 1.0]]


def test_one_views_quirks_move_the_estimate_and_the_mean_over_views_less():
    reference = [jittered(found, 3, seed) for seed, found in enumerate(REFERENCE)]
    views = [[jittered(found, 3, 100 * view + seed) for seed, found in enumerate(REFERENCE)] for view in range(1, 6)]
    # A candidate that errs exactly as the first view does looks far better than the reference against that view...
    quirky = views[0]
    alone = label_free_verdict(reference, quirky, StandInJudge(0.25, views[:1]), 0.01)
    assert alone["estimate"] < -0.1 and alone["judge_views"] == 1
    # ... and against five views that err each their own way, it is one in five.
    pooled = label_free_verdict(reference, quirky, StandInJudge(0.25, views), 0.01)
    assert pooled["judge_views"] == 5 and "averaged over the 5 views" in pooled["estimates"]
    assert abs(pooled["estimate"]) < abs(alone["estimate"]) / 2.5
    with pytest.raises(ValueError, match="no view"):
        label_free_verdict(reference, quirky, StandInJudge(0.25, []), 0.01)
    with pytest.raises(ValueError, match="40 images of reference detections but 39 of the mirror images'"):
        label_free_verdict(reference, quirky, StandInJudge(0.25, [views[0], views[1][1:]]), 0.01)


def test_the_configs_most_judge_views_are_the_views_there_are():
    bound = [m.le for m in AccuracySection.model_fields["judge_views"].metadata if hasattr(m, "le")]
    assert bound == [len(JUDGE_VIEWS)] and AccuracySection().judge_views <= len(JUDGE_VIEWS)
    assert len(set(JUDGE_VIEWS)) == len(JUDGE_VIEWS) and JUDGE_VIEWS[0] == JudgeView()


def test_a_drop_measured_by_the_caller_is_taken_as_it_is():
    # The accuracy pass measures the drop over the views once, for its summary, and hands it over.
    views = [[jittered(found, 3, 100 * view + seed) for seed, found in enumerate(REFERENCE)] for view in range(2)]
    measured = ViewedDrop(0.5, 0.4, 0.6, views=(Interval(0.5, 0.4, 0.6),) * 2)
    given = label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25, views), 0.01, measured=measured)
    assert given["verdict"] == DIFFERENT and (given["estimate"], given["low"], given["high"]) == (0.5, 0.4, 0.6)
    assert label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25, views), 0.01)["estimate"] == 0.0


def test_different_must_hold_on_every_view():
    # The stand-in errs high, so its lower end is no bound: a mean lifted over the budget by one view is not enough.
    views = [REFERENCE, REFERENCE]
    steady = Interval(0.07, 0.05, 0.09)

    def verdict(second: Interval) -> dict:
        return label_free_verdict(REFERENCE, REFERENCE, StandInJudge(0.25, views), 0.01,
                                  measured=ViewedDrop(0.05, 0.03, 0.07, views=(steady, second)))

    both = verdict(Interval(0.03, 0.02, 0.05))
    assert both["verdict"] == DIFFERENT
    assert both["statement"] == "mAP drop at least 0.020 (95%), above the budget 0.01 on each of the 2 views"
    assert [v["low"] for v in both["views"]] == [0.05, 0.02]
    lenient = verdict(Interval(0.03, 0.005, 0.05))
    assert lenient["verdict"] == UNDECIDED and "view 2's own reaches down to +0.005" in lenient["reason"]
    # that view's half-width 0.0225 must shrink to its distance from the budget, 0.02: 40 x 1.125^2 = 50.6 images
    assert lenient["images_needed"] == 51 and lenient["statement"].endswith("about 51 images would decide it")
    within = verdict(Interval(0.008, -0.01, 0.03))
    assert within["verdict"] == UNDECIDED and within["images_needed"] is None
    assert within["statement"].endswith("that view's estimate is within the budget")


def test_each_views_interval_is_drawn_with_the_mean():
    truths = [pseudo_labels([jittered(f, 3, 100 * view + seed) for seed, f in enumerate(REFERENCE)], 0.25)
              for view in range(3)]
    candidate = [without(found, 4) for found in REFERENCE]
    drop = drop_over_views(truths, REFERENCE, candidate)
    assert len(drop.views) == 3
    assert drop.estimate == pytest.approx(np.mean([v.estimate for v in drop.views]))
    assert all(v.low <= v.estimate <= v.high for v in drop.views) and drop.low < drop.estimate < drop.high
    alone = drop_over_views(truths[:1], REFERENCE, candidate)
    assert (alone.estimate, alone.low, alone.high) == (drop.views[0].estimate, drop.views[0].low, drop.views[0].high)
