"""What accuracy-aware int8 asks of each side (pipelines/runtimes/int8_contract.py): a network input as the graph's
inputs by name, and the drop the search aims under."""
import numpy as np
import pytest

from pipelines.runtimes.int8_contract import TARGET_SHARE, AccuracyControl, named_inputs


def test_an_image_alone_or_with_further_inputs_is_named_for_the_graph():
    image, sizes = np.zeros((1, 3, 4, 4), np.float32), np.array([[4, 4]], np.int64)
    assert named_inputs(image, "images") == {"images": image}
    named = named_inputs((image, {"orig_target_sizes": sizes}), "images")
    assert list(named) == ["images", "orig_target_sizes"] and named["orig_target_sizes"] is sizes


def test_the_search_aims_under_half_the_budget():
    control = AccuracyControl(reference=lambda forward: None, drop=lambda forward, first: 0.0, inputs=list,
                              budget=0.01, images=10, figure="mAP@0.5:0.95", digest="d")
    assert TARGET_SHARE == 0.5 and control.target == pytest.approx(0.005)
    assert (control.ranking_images, control.evaluations) == (8, 80)
