"""Operations of a real int8 model fed float again by ONNX Runtime (pipelines/runtimes/onnxruntime/reverting.py), on the
trained shapes model: every operation reverted computes exactly what the float model does, none reverted what the
quantized one does, and a saved model runs as the one in memory."""
import pytest

from tests.support.int8_models import assert_reverting_operations_feeds_them_float

pytestmark = pytest.mark.slow  # exports and quantizes the shapes model


def test_reverting_operations_feeds_them_float(tmp_path):
    assert_reverting_operations_feeds_them_float("onnxruntime", tmp_path)
