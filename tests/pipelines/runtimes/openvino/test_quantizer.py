"""OpenVINO's int8 (pipelines/runtimes/openvino/quantizer.py) through the runtime seam, on the trained shapes model:
within its mAP budget of fp32 on labelled images, really quantized, and the second preparation from the cache."""
import pytest

from tests.support.int8_models import assert_int8_stays_within_its_map_budget_and_is_cached

pytestmark = pytest.mark.slow  # exports and quantizes the shapes model, and scores it twice


def test_int8_stays_within_its_map_budget_and_is_cached(tmp_path):
    assert_int8_stays_within_its_map_budget_and_is_cached("openvino", tmp_path)
