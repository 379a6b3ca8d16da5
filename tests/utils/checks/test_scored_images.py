"""int8 is calibrated on images that the scored passes never use; with labels the agreement check runs on the
accuracy pass's images."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.runtimes.base import RuntimeNotSupported
from utils.checks.scored_images import agreement_count, calibration_document, calibration_split, more_images

PATHS = [Path(f"/data/images/{n:02d}.jpg") for n in range(10)]


def test_the_dataset_split_never_scores_a_calibration_image():
    calibration, scored = calibration_split(PATHS, 300, None)
    assert calibration == PATHS[5:] and scored == PATHS[:5]  # at most half calibrate
    calibration, scored = calibration_split(PATHS, 2, None)
    assert calibration == PATHS[8:] and scored == PATHS[:8]
    assert not set(calibration) & set(scored) and set(calibration) | set(scored) == set(PATHS)


def test_own_calibration_images_leave_every_image_scored_and_must_not_overlap():
    own = [Path(f"/cal/{n}.jpg") for n in range(4)]
    calibration, scored = calibration_split(PATHS, 3, own)
    assert calibration == own[:3] and scored == PATHS
    with pytest.raises(RuntimeNotSupported, match="runtime.calibration.path holds 1 of the images"):
        calibration_split(PATHS, 3, [own[0], PATHS[4]])


def test_one_image_cannot_be_split():
    with pytest.raises(RuntimeNotSupported, match="runtime.calibration.path"):
        calibration_split(PATHS[:1], 300, None)


def test_the_document_names_the_files():
    calibration, scored = calibration_split(PATHS, 2, None)
    document = calibration_document(calibration, scored, Path("/data/images"), None)
    assert document["files"] == ["08.jpg", "09.jpg"] and document["scored_images"] == 8
    assert "never scored" in document["source"]


def test_agreement_takes_the_accuracy_images_with_labels_unless_set():
    assert agreement_count(8, False, True, 200) == 200
    assert agreement_count(8, True, True, 200) == 8
    assert agreement_count(8, False, False, 200) == 8


def test_more_images_only_when_undecided_and_up_to_the_cap():
    undecided = {"verdict": "undecided", "images_needed": 450}
    assert more_images(undecided, 100, 1000, 300) == 300
    assert more_images(undecided, 100, 200, 300) == 200
    assert more_images(undecided, 200, 200, 300) is None  # nothing left to add
    assert more_images({"verdict": "within_budget"}, 100, 1000, 300) is None
    assert more_images({"verdict": "undecided", "images_needed": None}, 100, 1000, 300) is None
    assert more_images(None, 100, 1000, 300) is None
