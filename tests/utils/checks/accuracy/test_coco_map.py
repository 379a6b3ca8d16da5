"""utils.checks.accuracy.coco_map: hand-computed cases, and faster-coco-eval's figures against pycocotools' on the same
detections."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pytest

from datasets.image_folder import find_images
from datasets.labels import load_ground_truth
from tests.support.helpers import pycocotools_stats
from tests.support.paths import SHAPES
from utils.checks.accuracy.coco_map import (coco_evaluation, coco_map, map_drop_interval, map_of_matches, match_image,
                                   precision_recall_at)


@dataclass
class Found:
    boxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


@dataclass
class Truth:
    boxes: np.ndarray
    labels: np.ndarray
    crowd: Optional[np.ndarray] = None


def truth(*boxes, labels=None) -> Truth:
    array = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return Truth(array, np.asarray(labels if labels is not None else [0] * len(array), dtype=np.int64))


def found(boxes, scores, labels=None) -> Found:
    array = np.asarray(boxes, dtype=float).reshape(-1, 4)
    return Found(array, np.asarray(scores, dtype=float),
                 np.asarray(labels if labels is not None else [0] * len(array), dtype=np.int64))


def test_perfect_detections_score_one():
    truths = [truth([0, 0, 10, 10], [20, 20, 40, 50], labels=[0, 3]), truth([5, 5, 15, 25], labels=[3])]
    dets = [found(t.boxes, np.linspace(0.9, 0.5, len(t.labels)), t.labels) for t in truths]
    result = coco_evaluation(truths, dets)
    assert result.map_50_95 == pytest.approx(1.0) and result.map_50 == pytest.approx(1.0)
    assert [row["class_id"] for row in result.classes] == [0, 3]
    assert [row["objects"] for row in result.classes] == [1, 2]


def test_one_box_at_iou_062_counts_at_three_of_ten_thresholds():
    # IoU 62/100: matched at 0.50, 0.55 and 0.60, missed from 0.65 on.
    result = coco_evaluation([truth([0, 0, 10, 10])], [found([[0, 0, 10, 6.2]], [0.9])])
    assert result.map_50_95 == pytest.approx(0.3)
    assert result.map_50 == pytest.approx(1.0)
    assert result.map_75 == pytest.approx(0.0)


def test_false_positive_between_two_hits_gives_the_interpolated_area():
    # Ranked TP, FP, TP: precision 1 up to recall 0.5, then 2/3 up to recall 1; on COCO's 101 recall points
    # that is (51 * 1 + 50 * 2/3) / 101.
    truths = [truth([0, 0, 10, 10], [50, 50, 60, 60])]
    dets = [found([[0, 0, 10, 10], [100, 100, 110, 110], [50, 50, 60, 60]], [0.9, 0.8, 0.7])]
    result = coco_evaluation(truths, dets)
    assert result.map_50_95 == pytest.approx((51 + 50 * 2 / 3) / 101)
    assert result.classes[0]["ar_100"] == pytest.approx(1.0)


def test_wrong_class_and_no_detections_score_zero():
    assert coco_evaluation([truth([0, 0, 10, 10], labels=[1])],
                           [found([[0, 0, 10, 10]], [0.9], [2])]).map_50_95 == 0.0
    empty = coco_evaluation([truth([0, 0, 10, 10])], [found(np.zeros((0, 4)), [])])
    assert empty.map_50_95 == 0.0 and empty.detections == 0 and empty.classes[0]["ap_50"] == 0.0


def test_precision_recall_at_the_deployed_threshold():
    truths = [truth([0, 0, 10, 10], [50, 50, 60, 60], [80, 80, 90, 90])]
    # above 0.25: one hit, one miss (no object there), one duplicate of the hit; below: a hit not shown
    dets = [found([[0, 0, 10, 10], [200, 200, 210, 210], [0, 0, 10, 9], [50, 50, 60, 60]], [0.9, 0.8, 0.7, 0.1])]
    result = precision_recall_at(truths, dets, 0.25)
    assert (result["detections"], result["objects"], result["true_positives"]) == (3, 3, 1)
    assert result["precision"] == pytest.approx(1 / 3) and result["recall"] == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def shapes_truth():
    images = find_images(SHAPES / "images")
    return load_ground_truth(SHAPES / "labels", SHAPES / "images", images, [str(i) for i in range(80)]).images


def _noisy(truths, seed: int, spurious: int = 3):
    """Detections as a detector makes them: jittered boxes, some missed, some spurious, some misclassified."""
    rng = np.random.default_rng(seed)
    out = []
    for t in truths:
        keep = rng.random(len(t.labels)) > 0.1
        boxes = t.boxes[keep] + rng.normal(0, 4, (int(keep.sum()), 4))
        labels = np.where(rng.random(int(keep.sum())) < 0.05, 7, t.labels[keep])
        x, y = rng.uniform(0, 300, (2, spurious))
        boxes = np.vstack([boxes, np.stack([x, y, x + 40, y + 30], axis=1)])
        labels = np.concatenate([labels, rng.choice([0, 2, 7], spurious)])
        out.append(found(boxes, rng.uniform(0.001, 1.0, len(labels)), labels))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_equals_pycocotools_on_the_same_detections(shapes_truth, seed):
    dets = _noisy(shapes_truth, seed)
    ours = coco_evaluation(shapes_truth, dets)
    reference = pycocotools_stats(shapes_truth, dets)
    assert 0.2 < reference[0] < 0.9  # a case with something to get right
    assert ours.map_50_95 == pytest.approx(reference[0], abs=1e-4)
    assert ours.map_50 == pytest.approx(reference[1], abs=1e-4)
    assert ours.map_75 == pytest.approx(reference[2], abs=1e-4)
    assert ours.ar_100 == pytest.approx(reference[8], abs=1e-4)


def test_drop_interval_is_seeded_and_brackets_the_drop(shapes_truth):
    perfect = [found(t.boxes, np.ones(len(t.labels)), t.labels) for t in shapes_truth]
    noisy = _noisy(shapes_truth, 0)
    first = map_drop_interval(shapes_truth, perfect, noisy, resamples=20, seed=3)
    again = map_drop_interval(shapes_truth, perfect, noisy, resamples=20, seed=3)
    assert first == again
    assert first.drop == pytest.approx(1.0 - coco_map(shapes_truth, noisy))
    assert first.low <= first.drop <= first.high and first.high - first.low > 0
    same = map_drop_interval(shapes_truth, noisy, noisy, resamples=5)
    assert same.drop == 0.0 and same.low == 0.0 and same.high == 0.0


def test_bootstrap_mean_ap_equals_the_coco_evaluation_of_the_same_draw(shapes_truth):
    # The interval's fast path (match once, re-rank per draw) gives what faster-coco-eval gives on the draw.
    dets = _noisy(shapes_truth, 2, spurious=8)
    matches = [match_image(t, d) for t, d in zip(shapes_truth, dets)]
    assert map_of_matches(matches) == pytest.approx(coco_map(shapes_truth, dets), abs=1e-6)
    draw = np.random.default_rng(5).integers(0, len(shapes_truth), len(shapes_truth)).tolist()
    assert map_of_matches(matches, draw) == pytest.approx(coco_map(shapes_truth, dets, draw), abs=1e-6)
    truths = [truth([0, 0, 10, 10], [50, 50, 60, 60])]
    ranked = [found([[0, 0, 10, 10], [100, 100, 110, 110], [50, 50, 60, 60]], [0.9, 0.8, 0.7])]
    assert map_of_matches([match_image(truths[0], ranked[0])]) == pytest.approx((51 + 50 * 2 / 3) / 101)


# --- crowd regions (COCO iscrowd) ------------------------------------------------------------------------

def test_a_detection_on_a_crowd_region_is_neither_hit_nor_false_positive():
    # One object and one crowd region; the top-scored detection lies inside the crowd region.
    crowded = Truth(np.array([[0, 0, 10, 10], [100, 100, 200, 200]], float), np.array([0, 0]), np.array([False, True]))
    dets = [found([[120, 120, 140, 140], [0, 0, 10, 10]], [0.95, 0.9])]
    assert coco_evaluation([crowded], dets).map_50_95 == pytest.approx(1.0)
    assert coco_evaluation([crowded], dets).objects == 1
    assert map_of_matches([match_image(crowded, dets[0])]) == pytest.approx(1.0)
    # The same region as an ordinary object: the detection inside it (IoU 0.04) is a false positive first.
    plain = Truth(crowded.boxes, crowded.labels)
    assert coco_evaluation([plain], dets).map_50_95 < 0.6
    shown = precision_recall_at([crowded], dets, 0.25)
    assert (shown["objects"], shown["detections"], shown["true_positives"]) == (1, 1, 1)
    assert (precision_recall_at([plain], dets, 0.25)["detections"], precision_recall_at([plain], dets, 0.25)["objects"]) == (2, 2)


def _with_crowds(truths, every: int):
    out = []
    for index, t in enumerate(truths):
        flags = (np.arange(len(t.labels)) + index) % every == 0
        out.append(Truth(t.boxes, t.labels, flags))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_crowds_equal_pycocotools_on_the_same_detections(shapes_truth, seed):
    truths = _with_crowds(shapes_truth, 4)
    dets = _noisy(truths, seed, spurious=5)
    reference = pycocotools_stats(truths, dets)
    ours = coco_evaluation(truths, dets)
    assert 0.1 < reference[0] < 0.9
    assert reference[0] != pytest.approx(pycocotools_stats(shapes_truth, dets)[0], abs=1e-3)  # crowds matter
    assert ours.map_50_95 == pytest.approx(reference[0], abs=1e-4)
    assert ours.map_50 == pytest.approx(reference[1], abs=1e-4)
    assert ours.ar_100 == pytest.approx(reference[8], abs=1e-4)
    # The bootstrap's own matching gives the same figure, on all images and on a draw.
    matches = [match_image(t, d) for t, d in zip(truths, dets)]
    assert map_of_matches(matches) == pytest.approx(reference[0], abs=1e-4)
    draw = np.random.default_rng(seed).integers(0, len(truths), len(truths)).tolist()
    assert map_of_matches(matches, draw) == pytest.approx(coco_map(truths, dets, draw), abs=1e-6)


def test_crowd_flags_are_read_from_coco_json(tmp_path):
    images = find_images(SHAPES / "images")[:2]
    document = {"images": [{"id": i, "file_name": p.name} for i, p in enumerate(images)],
                "annotations": [{"id": 1, "image_id": 0, "category_id": 0, "bbox": [1, 2, 30, 40], "iscrowd": 0},
                                {"id": 2, "image_id": 0, "category_id": 2, "bbox": [50, 60, 70, 80], "iscrowd": 1}],
                "categories": [{"id": 0, "name": "0"}, {"id": 2, "name": "2"}]}
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(document))
    first = load_ground_truth(path, SHAPES / "images", images, [str(i) for i in range(80)]).images[0]
    assert first.labels.tolist() == [0, 2] and first.crowd.tolist() == [False, True]
    assert first.boxes[1].tolist() == [50, 60, 120, 140]
