"""The OpenVINO runtime compiles one model of fixed shape per input shape it meets, up to a limit, and runs
further shapes on the model with dynamic axes, counting them."""
from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as ops
import pytest

from pipelines.runtimes.openvino.signal_stack import shared_core
from pipelines.runtimes.openvino.static_shapes import CompiledByShape


def dynamic_model() -> ov.Model:
    image = ops.parameter(ov.PartialShape([-1, 3, -1, -1]), ov.Type.f32, name="images")
    weights = ops.constant(np.random.default_rng(0).standard_normal((4, 3, 3, 3)).astype(np.float32))
    conv = ops.convolution(image, weights, [1, 1], [1, 1], [1, 1], [1, 1])
    return ov.Model([ops.relu(conv)], [image], "conv")


@pytest.fixture()
def compiled():
    core = shared_core()
    calls = []

    def compile_model(model):
        calls.append(model.inputs[0].get_partial_shape())
        return core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": 1})

    return CompiledByShape(dynamic_model(), compile_model, limit=2), calls


def run(model: ov.CompiledModel, array: np.ndarray) -> np.ndarray:
    return model.create_infer_request().infer({0: array})[0]


def test_shapes_up_to_the_limit_get_a_model_of_fixed_shape_with_the_same_outputs(compiled):
    by_shape, calls = compiled
    rng = np.random.default_rng(1)
    for shape in [(1, 3, 32, 32), (2, 3, 16, 48)]:
        array = rng.standard_normal(shape).astype(np.float32)
        model = by_shape.for_shape(shape)
        assert model is not by_shape.dynamic
        assert model.inputs[0].get_partial_shape().is_static
        assert list(model.inputs[0].get_shape()) == list(shape)
        assert by_shape.for_shape(shape) is model  # compiled once
        np.testing.assert_allclose(run(model, array), run(by_shape.dynamic, array), rtol=1e-5, atol=1e-5)
    assert len(calls) == 3 and calls[0].is_dynamic  # the dynamic model, then one per shape
    assert by_shape.shapes() == [[1, 3, 32, 32], [2, 3, 16, 48]] and by_shape.dynamic_calls == 0


def test_shapes_past_the_limit_run_dynamic_and_are_counted(compiled):
    by_shape, calls = compiled
    by_shape.for_shape((1, 3, 8, 8))
    by_shape.for_shape((1, 3, 16, 16))
    assert by_shape.for_shape((1, 3, 24, 24)) is by_shape.dynamic
    assert by_shape.for_shape((1, 3, 24, 24)) is by_shape.dynamic
    assert by_shape.dynamic_calls == 2 and len(calls) == 3
    assert by_shape.shapes() == [[1, 3, 8, 8], [1, 3, 16, 16]]


def test_a_shape_the_model_refuses_fixed_runs_dynamic():
    core = shared_core()
    by_shape = CompiledByShape(dynamic_model(), lambda model: core.compile_model(model, "CPU"), limit=4)
    assert by_shape.for_shape((1, 5, 8, 8)) is by_shape.dynamic  # 5 channels: the convolution's weights take 3
    assert by_shape.shapes() == [] and by_shape.dynamic_calls == 1
