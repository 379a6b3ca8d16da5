"""Within budget means the same with labels as without: the mAP drop's interval decides (utils.checks.verdict)."""
import pytest

from utils.checks.verdict import apply_budget, budget_verdict, verdict_warnings

AGREEMENT = {"verdict": "different", "strict": {"recall": 0.6}}


def _accuracy(drop: float, low: float, high: float, images: int = 150) -> dict:
    return {"images": images, "drop": {"map_50_95": drop, "against": "labels",
                                       "interval": {"low": low, "high": high, "confidence": 0.95, "over": "images"}}}


def test_a_labelled_interval_that_holds_the_budget_is_undecided_with_the_images_that_would_decide_it():
    # A real case: OpenVINO int8 on a trained YOLOv7-tiny read 0.0070 [0.0030, 0.0110] on 150 images against 0.01,
    # and was called within_budget on the point estimate; over all 300 images its drop was 0.0114.
    graded = apply_budget(AGREEMENT, _accuracy(0.0070, 0.0030, 0.0110), 0.01)
    assert graded["verdict"] == "undecided" and graded["detections_verdict"] == "different"
    # half-width 0.004 over a distance of 0.003 from the budget: 150 x (4/3)^2 = 266.7 -> 267 images
    assert graded["accuracy_drop"]["images_needed"] == 267
    assert "about 267 would decide it" in " ".join(verdict_warnings(graded))


@pytest.mark.parametrize("low, high, expected", [(-0.002, 0.009, "within_budget"), (0.011, 0.02, "different")])
def test_an_interval_wholly_on_one_side_decides(low, high, expected):
    assert apply_budget(AGREEMENT, _accuracy((low + high) / 2, low, high), 0.01)["verdict"] == expected


def test_without_an_interval_the_point_estimate_decides_and_equal_stays_equal():
    assert budget_verdict("different", 0.005, 0.01) == "within_budget"
    assert budget_verdict("different", 0.02, 0.01) == "different"
    assert budget_verdict("equal", 0.5, 0.01, {"low": 0.4, "high": 0.6}) == "equal"
