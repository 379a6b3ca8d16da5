"""NMS against a brute-force greedy reference written here with plain Python loops.

Random boxes use integer centres and even sizes, so corners, class offsets, areas and intersections
are exact in float32 and IoU comparisons cannot flip on rounding. Scores are computed in the reference
as a float32 product, exactly as torch does.

Ties: the brute-force reference's own sort and torch's non-stable descending sort may order equal scores
differently (checked in test_torch_sort_reorders_ties). So with tied scores the output order, and which of two
tied overlapping boxes survives, are left unspecified against the reference. Tie tests therefore use cases where
no two tied candidates can suppress each other -- then the kept set does not depend on tie order -- and
compare sets. The exact-order comparisons use random continuous scores and assert they are distinct.
"""

import numpy as np
import pytest
import torch
import torchvision

from pipelines.boxes.nms import (CLASS_OFFSET_PX, PER_CLASS_ABOVE, NmsSettings, _candidates,
                                 non_max_suppression)
from pipelines.settings import NO_CAP


def _iou(a, b):
    inter_w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    inter_h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = inter_w * inter_h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union


def _reference_candidates(image_rows, conf_thres, classes, multi_label):
    """(box, score, class) in row order, then class order, as the pipeline builds them."""
    candidates = []
    for cx, cy, w, h, obj, *class_probs in image_rows:
        if not obj > conf_thres:
            continue
        box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
        scores = [float(np.float32(obj) * np.float32(p)) for p in class_probs]
        if multi_label:
            picked = [c for c, s in enumerate(scores) if s > conf_thres]
        else:
            best = max(range(len(scores)), key=lambda c: scores[c])  # first index on equal scores
            picked = [best] if scores[best] > conf_thres else []
        for c in picked:
            if classes is None or c in classes:
                candidates.append((box, scores[c], c))
    return candidates


def _reference_nms(image_rows, conf_thres=0.25, iou_thres=0.45, classes=None, agnostic=False,
                   multi_label=False, max_det=300, max_nms=30000):
    candidates = _reference_candidates(image_rows, conf_thres, classes, multi_label)
    candidate_count = len(candidates)
    candidates = sorted(candidates, key=lambda cand: -cand[1])[:max_nms]
    kept = []
    for box, score, cls in candidates:
        suppressed = any(
            (agnostic or cls == kept_cls) and _iou(box, kept_box) > iou_thres
            for kept_box, _, kept_cls in kept
        )
        if not suppressed:
            kept.append((box, score, cls))
    return [(*box, score, float(cls)) for box, score, cls in kept[:max_det]], candidate_count


def _random_prediction(seed, batch=2, rows=60, nc=3, objects=8, canvas=300, max_size=120, score_levels=None):
    """(B, rows, 5 + nc) float32 predictions with exact-integer geometry.

    Rows are jittered copies of a few object boxes, like a detector's overlapping anchors, so that
    suppression actually happens. score_levels=k draws obj and class probabilities from
    {1/k, ..., k/k}, producing many exact ties.
    """
    rng = np.random.default_rng(seed)
    object_centres = rng.integers(0, canvas, size=(batch, objects, 2))
    object_half_sizes = rng.integers(max_size // 8, max_size // 2 + 1, size=(batch, objects, 2))
    which = rng.integers(0, objects, size=(batch, rows))
    half_sizes = np.take_along_axis(object_half_sizes, which[..., None], axis=1)
    centres = np.take_along_axis(object_centres, which[..., None], axis=1)
    centres = centres + rng.integers(-1, 2, size=(batch, rows, 2)) * rng.integers(0, half_sizes // 3 + 1)
    sizes = 2 * np.maximum(1, half_sizes + rng.integers(-3, 4, size=(batch, rows, 2)))
    if score_levels is None:
        probs = rng.uniform(0, 1, size=(batch, rows, 1 + nc))
    else:
        probs = rng.integers(1, score_levels + 1, size=(batch, rows, 1 + nc)) / score_levels
    return torch.from_numpy(np.concatenate((centres, sizes, probs), axis=2).astype(np.float32))


def _as_rows(detections):
    return [tuple(row) for row in detections.tolist()]


SETTINGS = [
    pytest.param({}, id="defaults"),
    pytest.param({"iou_thres": 0.3}, id="iou-0.3"),
    pytest.param({"agnostic": True}, id="agnostic"),
    pytest.param({"multi_label": True}, id="multi-label"),
    pytest.param({"classes": [0, 2]}, id="classes-filter"),
    pytest.param({"max_det": 4}, id="max-det"),
    pytest.param({"max_nms": 7}, id="max-nms"),
    pytest.param({"conf_thres": 0.001, "iou_thres": 0.65, "multi_label": True}, id="eval-settings"),
]


@pytest.mark.parametrize("settings", SETTINGS)
def test_matches_brute_force_on_random_boxes(settings):
    removed_somewhere = False
    for seed in range(25):
        prediction = _random_prediction(seed)
        detections = non_max_suppression(prediction, NmsSettings(**settings))
        assert len(detections) == prediction.shape[0]
        for image_rows, image_detections in zip(prediction.tolist(), detections):
            expected, candidate_count = _reference_nms(image_rows, **settings)
            candidates = _reference_candidates(
                image_rows, settings.get("conf_thres", 0.25), settings.get("classes"), settings.get("multi_label", False)
            )
            scores = [score for _, score, _ in candidates]
            assert len(set(scores)) == len(scores), "test data must be tie-free for an exact-order check"
            assert image_detections.shape[1] == 6
            assert _as_rows(image_detections) == expected, f"seed {seed}"
            removed_somewhere |= len(expected) < candidate_count
    assert removed_somewhere  # the comparison exercised suppression or truncation, not just filtering


def test_torch_sort_reorders_ties():
    # Documents why tie tests compare sets: the sort torchvision uses is not stable on CPU.
    tied = torch.tensor([0.5] * 20 + [0.7] * 20)
    order = torch.sort(tied, descending=True).indices
    assert not torch.equal(order, torch.sort(tied, descending=True, stable=True).indices)


def _tied_candidates_interact(candidates, iou_thres, agnostic):
    return any(
        a[1] == b[1] and (agnostic or a[2] == b[2]) and _iou(a[0], b[0]) > iou_thres
        for i, a in enumerate(candidates)
        for b in candidates[i + 1:]
    )


@pytest.mark.parametrize("settings", [{}, {"agnostic": True}, {"multi_label": True}], ids=str)
def test_tied_scores_keep_the_reference_set(settings):
    compared = ties_seen = suppressed = 0
    for seed in range(60):
        # Small boxes on a wide canvas: tied candidates rarely overlap, so most seeds are comparable.
        prediction = _random_prediction(
            seed, batch=1, rows=40, objects=40, canvas=600, max_size=60, score_levels=10
        )
        image_rows = prediction[0].tolist()
        candidates = _reference_candidates(image_rows, 0.25, None, settings.get("multi_label", False))
        if _tied_candidates_interact(candidates, 0.45, settings.get("agnostic", False)):
            continue
        detections = non_max_suppression(prediction, NmsSettings(**settings))[0]
        expected, candidate_count = _reference_nms(image_rows, **settings)
        assert sorted(_as_rows(detections)) == sorted(expected), f"seed {seed}"
        scores = detections[:, 4]
        assert (scores[:-1] >= scores[1:]).all()
        ties_seen += len(expected) - len({row[4] for row in expected})
        suppressed += candidate_count - len(expected)
        compared += 1
    assert compared >= 20
    assert ties_seen > 0 and suppressed > 0  # tied scores were kept and suppression happened


def _prediction(rows, nc):
    """One image from rows of (cx, cy, w, h, obj, {class: prob})."""
    tensor = torch.zeros(1, len(rows), 5 + nc)
    for i, (cx, cy, w, h, obj, class_probs) in enumerate(rows):
        tensor[0, i, :5] = torch.tensor([cx, cy, w, h, obj])
        for cls, prob in class_probs.items():
            tensor[0, i, 5 + cls] = prob
    return tensor


def test_tied_overlapping_boxes_keep_exactly_one():
    # Same score, same class, IoU 380/420 = 0.9: which survives is unspecified, but only one may.
    prediction = _prediction([(50, 50, 20, 20, 0.9, {0: 0.8}), (51, 50, 20, 20, 0.9, {0: 0.8})], nc=1)
    detections = non_max_suppression(prediction)[0]
    assert detections.shape == (1, 6)
    assert detections[0, 0].item() in (40.0, 41.0)


def test_identical_boxes_of_different_classes_both_survive_unless_agnostic():
    rows = [(50, 50, 20, 20, 0.9, {0: 0.9}), (50, 50, 20, 20, 0.9, {1: 0.8})]
    prediction = _prediction(rows, nc=2)
    assert non_max_suppression(prediction)[0][:, 5].tolist() == [0.0, 1.0]
    agnostic = non_max_suppression(prediction, NmsSettings(agnostic=True))[0]
    assert agnostic[:, 5].tolist() == [0.0]


def test_hand_case_suppression_and_output_format():
    rows = [
        (50, 50, 20, 20, 0.9, {0: 0.5}),  # score 0.45; IoU 360/440 = 0.82 with the next box -> suppressed
        (52, 50, 20, 20, 0.8, {0: 0.75}),  # score 0.6, the best
        (80, 50, 20, 20, 0.7, {0: 0.5}),  # score 0.35; IoU 0 with the others -> kept
    ]
    detections = non_max_suppression(_prediction(rows, nc=1))[0]
    expected = torch.tensor([[42.0, 40.0, 62.0, 60.0, 0.6, 0.0], [70.0, 40.0, 90.0, 60.0, 0.35, 0.0]])
    torch.testing.assert_close(detections, expected)


def test_confidence_threshold_is_strict():
    rows = [
        (20, 20, 10, 10, 0.5, {0: 0.5}),  # score exactly 0.25 == conf: dropped
        # obj exactly 0.25 == conf: dropped before scoring. The class value above 1 isolates this test
        # (with probabilities <= 1 the score could never pass where obj fails).
        (60, 20, 10, 10, 0.25, {0: 2.0}),
        (100, 20, 10, 10, 0.9, {0: 0.2}),  # obj passes, score 0.18 does not: dropped
        (140, 20, 10, 10, 0.5, {0: 0.5001}),  # score just above: kept
    ]
    for multi_label in (False, True):
        settings = NmsSettings(conf_thres=0.25, multi_label=multi_label)
        detections = non_max_suppression(_prediction(rows, nc=1), settings)[0]
        assert detections[:, 0].tolist() == [135.0]


def test_best_class_only_unless_multi_label():
    rows = [(50, 50, 20, 20, 1.0, {0: 0.6, 1: 0.9, 2: 0.1})]
    single = non_max_suppression(_prediction(rows, nc=3))[0]
    assert single[:, 5].tolist() == [1.0]
    multi = non_max_suppression(_prediction(rows, nc=3), NmsSettings(multi_label=True))[0]
    assert multi[:, 5].tolist() == [1.0, 0.0]
    torch.testing.assert_close(multi[:, 4], torch.tensor([0.9, 0.6]))


def test_classes_filter_applies_after_best_class():
    rows = [(50, 50, 20, 20, 1.0, {0: 0.6, 1: 0.9}), (150, 50, 20, 20, 1.0, {0: 0.7})]
    detections = non_max_suppression(_prediction(rows, nc=2), NmsSettings(classes=[0]))[0]
    # the first box's best class is 1, so it is filtered out rather than reported as class 0
    assert detections[:, :1].tolist() == [[140.0]]


def test_max_det_keeps_the_highest_scores():
    rows = [(30 * i + 15, 15, 10, 10, 0.3 + 0.05 * i, {0: 1.0}) for i in range(10)]
    detections = non_max_suppression(_prediction(rows, nc=1), NmsSettings(max_det=3))[0]
    torch.testing.assert_close(detections[:, 4], torch.tensor([0.75, 0.7, 0.65]))
    assert len(non_max_suppression(_prediction(rows, nc=1), NmsSettings(max_det=NO_CAP))[0]) == 10  # no cap: every box NMS leaves


def test_empty_inputs():
    empty = non_max_suppression(torch.zeros(2, 0, 85))
    assert [d.shape for d in empty] == [(0, 6), (0, 6)]
    below_conf = non_max_suppression(torch.full((1, 10, 85), 0.1))
    assert below_conf[0].shape == (0, 6)
    assert non_max_suppression(torch.zeros(0, 5, 85)) == []


def test_an_image_with_nothing_past_objectness_gives_the_same_empty_rows_as_one_with_candidates():
    # Rows with high class scores but objectness at the threshold (strict test): nothing passes. The short way out
    # must return what the full path returns for an image whose candidates all fail: (0, 6) in the input's dtype.
    prediction = torch.full((2, 6, 7), 0.9, dtype=torch.float64)
    prediction[0, :, 4] = 0.25
    prediction[1, :, 5:] = 0.1  # objectness passes, class score x objectness 0.09 does not
    nothing, all_fail = non_max_suppression(prediction, NmsSettings(conf_thres=0.25))
    assert nothing.shape == all_fail.shape == (0, 6)
    assert nothing.dtype == all_fail.dtype == torch.float64


def test_input_is_not_modified_and_half_precision_is_accepted():
    prediction = _random_prediction(1)
    before = prediction.clone()
    full = non_max_suppression(prediction)
    assert torch.equal(prediction, before)
    half = non_max_suppression(prediction.to(torch.bfloat16))
    assert [d.dtype for d in half] == [torch.float32, torch.float32]
    assert sum(d.shape[0] for d in half) > 0 and len(half) == len(full)


def test_a_nan_class_score_does_not_hide_the_rows_other_classes():
    # Rows are dropped early when their best class cannot pass; a NaN best must not drop a row whose other class
    # passes (multi-label keeps it under that class, as the full product test does).
    prediction = torch.zeros(1, 2, 8)
    prediction[0, 0] = torch.tensor([50.0, 50.0, 20.0, 20.0, 0.9, float("nan"), 0.8, 0.1])
    prediction[0, 1] = torch.tensor([150.0, 150.0, 20.0, 20.0, 0.9, 0.1, 0.2, 0.1])  # best 0.18: cannot pass
    kept = non_max_suppression(prediction, NmsSettings(conf_thres=0.25, multi_label=True))[0]
    assert kept[:, 5].tolist() == [1.0]
    torch.testing.assert_close(kept[:, 4], torch.tensor([0.9 * 0.8]))


@pytest.mark.parametrize("settings", SETTINGS)
def test_rows_without_objectness_as_a_transposed_view_match_brute_force(settings):
    # A layout without objectness carries 1 there, and its rows are a view of (B, 5 + C, N): the best-class test
    # runs on the view first. A NaN row must go on as it would in the full product test.
    for seed in range(10):
        prediction = _random_prediction(seed)
        prediction[..., 4] = 1.0
        prediction[0, 0, 5] = float("nan")
        view = prediction.transpose(1, 2).contiguous().transpose(1, 2)
        assert not view.is_contiguous()
        found = non_max_suppression(view, NmsSettings(**settings))
        for image_rows, image_detections in zip(prediction.tolist(), found):
            expected, _ = _reference_nms(image_rows, **settings)
            assert _as_rows(image_detections) == expected, f"seed {seed}"


def test_torchvisions_nms_orders_equal_scores_by_index():
    # The class-by-class path orders its kept boxes by a stable sort: that is the same order only while
    # torchvision's own NMS breaks ties by index.
    tied = torch.tensor([0.5] * 20 + [0.7] * 20)
    apart = torch.stack([torch.arange(40) * 20.0, torch.zeros(40), torch.arange(40) * 20.0 + 10, torch.full((40,), 10.0)], 1)
    assert torchvision.ops.nms(apart, tied, 0.5).tolist() == list(range(20, 40)) + list(range(20))


@pytest.mark.parametrize("score_levels", [None, 8], ids=["distinct-scores", "tied-scores"])
@pytest.mark.parametrize("nc, rows", [(1, 4000), (5, 1000), (80, 60)])
def test_many_candidates_go_class_by_class_and_keep_what_one_call_keeps(score_levels, nc, rows):
    # mAP settings on an untrained network: thousands of candidates. The reference is torchvision's one call over
    # every class, boxes shifted apart by class as the pipeline does.
    prediction = _random_prediction(3, batch=1, rows=rows, nc=nc, objects=60, canvas=600, score_levels=score_levels)
    rows = prediction[0]
    boxes, scores, class_idx = _candidates(rows[rows[:, 4] > 0.001], 0.001, multi_label=True)
    assert len(scores) > PER_CLASS_ABOVE
    one_call = torchvision.ops.nms(boxes + class_idx[:, None].float() * CLASS_OFFSET_PX, scores, 0.65)
    kept = non_max_suppression(prediction, NmsSettings(conf_thres=0.001, iou_thres=0.65, multi_label=True,
                                                       max_det=100_000))[0]
    assert len(kept) < len(scores)  # suppression happened
    expected = torch.cat((boxes[one_call], scores[one_call, None], class_idx[one_call, None].float()), dim=1)
    assert torch.equal(kept, expected)
