"""The runtime seam's contract: every registered runtime is a Runtime with the capabilities it declares, each with
one signature, and torch.compile takes its mode and backend as options; a user's file gets an example of the
shape its graph fixes, and a failure on it blames the file only where the file is at fault."""
import inspect
from pathlib import Path

import pytest
import torch
from torch import nn

from pipelines.contract import LoadedNetwork
from pipelines.runtimes import registry
from pipelines.runtimes.base import (Feeding, Runtime, RuntimeNotSupported, a_file_it_may_refuse,
                                     at_the_graphs_shape)
from pipelines.runtimes.registry import build_runtime


@pytest.mark.parametrize("backend", list(registry.SPECS))
def test_every_runtime_is_a_runtime_with_one_signature_per_capability(backend):
    spec = registry.SPECS[backend]
    session = registry._attribute(spec, spec.session)
    assert issubclass(session, Runtime) and session.name == backend
    for capability in ("prepare", "settings", "profiling", "peer_defaults"):
        assert list(inspect.signature(getattr(session, capability)).parameters) == \
            list(inspect.signature(getattr(Runtime, capability)).parameters), capability
    profiles = session.profiling is not Runtime.profiling
    assert profiles == (spec.layer_reader is not None or spec.trace_reader is not None)
    assert list(inspect.signature(session.__init__).parameters) == ["self", "settings", "options"]
    built = registry.build_runtime(backend, **{key: field.default for key, field in spec.options.model_fields.items()})
    assert isinstance(built, session) and built.streams == 1
    with pytest.raises(TypeError, match=f"runtime {backend} takes no nonesuch"):
        registry.build_runtime(backend, nonesuch=1)


def test_a_runtime_without_a_profiler_says_so():
    with pytest.raises(RuntimeNotSupported, match="runtime.backend torch has no profiler of its own"):
        build_runtime("torch").profiling()
    assert build_runtime("torch").peer_defaults() is None and build_runtime("torch").streams == 1


@pytest.mark.slow
def test_torch_compile_takes_a_mode_and_a_backend():
    network = LoadedNetwork(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()).eval(), ["a"], "random", True, "k")
    runtime = build_runtime("torch", fuse=False, compile=True, compile_backend="eager", compile_mode="default")
    forward = runtime.prepare(network, torch.zeros(1, 3, 16, 16))
    assert forward(torch.ones(1, 3, 16, 16)).shape == (1, 4, 14, 14)
    settings = runtime.settings()
    assert settings["compile_backend"] == "eager" and settings["compile_mode"] == "default"
    with pytest.raises(RuntimeNotSupported, match="runtime.compile_backend 'nonesuch' is not a torch.compile backend"):
        build_runtime("torch", compile=True, compile_backend="nonesuch")
    with pytest.raises(RuntimeNotSupported, match="apply with runtime.compile true only"):
        build_runtime("torch", compile_mode="max-autotune")


def test_below_the_layer_asks_the_runtimes_specs_instead_of_naming_them():
    import ast

    from tests.support.paths import ROOT as root
    for module in ("utils/measure/below_layer/control.py", "utils/assembly/dependency_logs.py", "utils/measure/below_layer/native_time.py"):
        constants = [node.value for node in ast.walk(ast.parse((root / module).read_text()))
                     if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        assert not [value for value in constants if value in registry.SPECS], module
    from utils.assembly.dependency_logs import DEPENDENCIES
    from utils.measure.below_layer.native_time import CATEGORIES
    assert {"openvino", "nncf", "onnxruntime"} <= set(DEPENDENCIES)
    assert CATEGORIES[0] == "python" and "torch_onednn" in CATEGORIES and CATEGORIES[-1] == "waiting"


def test_the_example_takes_the_graphs_fixed_batch_height_and_width():
    square = torch.ones(1, 3, 800, 800)
    assert at_the_graphs_shape(square, [1, 3, 800, 608]).shape == (1, 3, 800, 608)  # a static non-square file
    assert at_the_graphs_shape(square, [4, 3, 800, 608]).shape == (4, 3, 800, 608)
    assert at_the_graphs_shape(square, ["batch", 3, "height", "width"]) is square  # dynamic: as it is
    assert at_the_graphs_shape(square, [2, 3, None, None]).shape == (2, 3, 800, 800)


def file_network() -> LoadedNetwork:
    return LoadedNetwork(None, ["a"], "file", False, "k", file=Path("model.onnx"))


def test_a_graph_the_runtime_refuses_blames_the_file():
    with pytest.raises(RuntimeNotSupported, match=r"model.file model.onnx: rt cannot run it \(ValueError: opset 99"):
        with a_file_it_may_refuse(file_network(), "rt"):
            raise ValueError("opset 99")


def test_a_shape_the_graph_takes_and_fails_on_blames_the_file_on_this_runtime():
    with pytest.raises(RuntimeNotSupported, match=r"loaded it but cannot run it on an input of shape \[1, 3, 8, 6\]"):
        with a_file_it_may_refuse(file_network(), "rt") as feeding:
            feeding.fed((1, 3, 8, 6), [1, 3, 8, 6])
            raise ValueError("kernel failed")


def test_a_shape_the_graph_does_not_take_is_detbenchs_fault_not_the_files():
    with pytest.raises(RuntimeError, match=r"detbench fed an input of shape \[1, 3, 8, 8\] to a graph that takes "
                                           r"\[1, 3, 8, 6\].*the file is not at fault") as raised:
        with a_file_it_may_refuse(file_network(), "rt") as feeding:
            feeding.fed((1, 3, 8, 8), [1, 3, 8, 6])
            raise ValueError("Got invalid dimensions for input")
    assert not isinstance(raised.value, RuntimeNotSupported)
    assert Feeding().misfit() is None
    free = Feeding()
    free.fed((2, 3, 64, 96), ["batch", 3, "height", "width"])
    assert free.misfit() is None
