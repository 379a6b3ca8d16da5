"""Per-layer snapshots (utils/measure/layers/runtime_layers.py) from a real profiling pass of ONNX Runtime and of
OpenVINO: rows keyed by our module paths, layer self times plus unattributed adding up exactly to the Model row, and
the normal session back afterwards. Each runtime's reader on hand-made profiles is tested beside it
(pipelines/runtimes/<name>/test_layers.py)."""
from __future__ import annotations

import pytest
import torch

from pipelines.runtimes.registry import build_runtime
from pipelines.yolo.family import load_network
from utils.measure.layers.tables import layer_timer_frame
from pipelines.runtimes.onnxruntime import layers as ort_layers
from pipelines.runtimes.openvino import layers as ov_layers
from tests.support.forward_inputs import as_taken
from tests.support.layer_rows import assert_adds_up, by_path, onnxruntime_layers, openvino_layers

SOURCE_ONNXRUNTIME, SOURCE_OPENVINO = ort_layers.SOURCE, ov_layers.SOURCE


NETWORK_SIZE = 96


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    network = load_network("yolov7-tiny", None, seed=0)
    example = torch.zeros(1, 3, NETWORK_SIZE, NETWORK_SIZE)
    cache_dir = tmp_path_factory.mktemp("onnx-cache")
    runtimes = {"onnxruntime": build_runtime("onnxruntime", threads=2, cache_dir=cache_dir),
                "openvino": build_runtime("openvino", threads=2, cache_dir=cache_dir)}
    return {name: (runtime, runtime.prepare(network, example)) for name, runtime in runtimes.items()}


PASS = [torch.rand(2, 3, NETWORK_SIZE, NETWORK_SIZE), torch.rand(1, 3, 64, 128)]  # a square batch, then rect


@pytest.mark.slow
def test_onnxruntime_profiling_pass(prepared, tmp_path):
    runtime, forward = prepared["onnxruntime"]
    with runtime.profiling(tmp_path) as profile:
        outputs = [forward(batch) for batch in PASS]
    assert profile.path.parent == tmp_path and profile.path.is_file()
    assert [output.shape[0] for output in outputs] == [2, 1]
    snapshot, _ = onnxruntime_layers(profile.path, forwards=len(PASS), images=3)
    paths = set(by_path(snapshot))
    assert {"model.0", "model.1", "model.77.m.0", "model.77.m.2"} <= paths
    assert by_path(snapshot)["model.77.m.0"].calls == len(PASS)
    assert_adds_up(snapshot)
    assert layer_timer_frame(snapshot)["path"].tolist() == list(by_path(snapshot))
    # The normal session is back: it profiles nothing and keeps ONNX Runtime's own spinning.
    assert not runtime._session.get_session_options().enable_profiling
    assert runtime.settings()["allow_spinning"] is True


@pytest.mark.slow
def test_openvino_profiling_pass(prepared):
    runtime, forward = prepared["openvino"]
    assert forward.input_dtype == torch.uint8  # it takes the pixels and converts them itself, by default
    pixels = [as_taken(forward, batch) for batch in PASS]
    with runtime.profiling() as profile:
        for batch in pixels:
            forward(batch)
    assert {counter.inference for counter in profile.counters} == {0, 1}
    assert {"EXECUTED", "NOT_RUN"} <= {counter.status for counter in profile.counters}
    snapshot, _ = openvino_layers(profile.counters, forwards=len(PASS), images=3)
    rows = by_path(snapshot)
    assert {"model.1.conv", "model.8.m"} <= set(rows)
    # A module whose nodes ran several op types (OpenVINO may keep the first conv's bias add apart) has one
    # row per type under its path.
    assert any(path == "model.0.conv" or path.startswith("model.0.conv/") for path in rows)
    assert rows["model.1.conv"].type == "Convolution" and rows["model.1.conv"].name.startswith("brgconv")
    assert_adds_up(snapshot)
    # The normal model is back: it counts nothing, and a later forward adds nothing to the profile.
    assert runtime._compiled.dynamic.get_property("PERF_COUNT") in (False, "NO")
    before = len(profile.counters)
    forward(pixels[0])
    assert len(profile.counters) == before
