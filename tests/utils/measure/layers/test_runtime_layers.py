"""Per-layer snapshots from ONNX Runtime's profile and OpenVINO's counters: rows keyed by our module paths,
warm-up runs left out, and layer self times plus unattributed adding up exactly to the Model row."""
from __future__ import annotations

import json

import pytest
import torch

from pipelines.runtimes.registry import build_runtime
from pipelines.yolo.family import load_network
from utils.measure.layers.tables import layer_timer_frame, layer_types_frame
from utils.record.layers import KIND_LAYER, MODEL_FORWARD_KINDS, TimingSnapshot
from pipelines.runtimes.onnxruntime import layers as ort_layers
from pipelines.runtimes.openvino import layers as ov_layers
from pipelines.runtimes.openvino.layers import NodeCounter
from pipelines.runtimes.profiles import scope_of
from tests.support.forward_inputs import as_taken
from utils.measure.layers.runtime_layers import layer_timing

SOURCE_ONNXRUNTIME, SOURCE_OPENVINO = ort_layers.SOURCE, ov_layers.SOURCE

US = 1000  # ns per microsecond


def onnxruntime_layers(profile_json_path, forwards: int, images: int):
    """A profile through ONNX Runtime's layer reader, then into rows."""
    return layer_timing(ort_layers.node_runs(profile_json_path, forwards), images)


def openvino_layers(counters, forwards: int, images: int):
    """Counters through OpenVINO's layer reader, then into rows."""
    return layer_timing(ov_layers.node_runs(counters, forwards), images)


def by_path(snapshot: TimingSnapshot) -> dict:
    return {record.path: record for record in snapshot.records}


def assert_adds_up(snapshot: TimingSnapshot) -> None:
    model = by_path(snapshot)["Model"]
    assert sum(r.self_ns for r in snapshot.records if r.kind in MODEL_FORWARD_KINDS) == model.total_ns
    assert sum(model.call_total_ns) == model.total_ns and model.calls == snapshot.forwards
    assert by_path(snapshot)["Pipeline"].total_ns == model.total_ns
    for record in snapshot.records:
        if record.kind == KIND_LAYER:
            assert record.self_ns == record.total_ns == sum(record.call_total_ns)
            assert record.calls == len(record.call_total_ns) <= snapshot.forwards
    assert layer_types_frame(snapshot)["share_of_forward"].sum() == pytest.approx(1.0)


def test_scope_of_exporter_names():
    assert scope_of("/model.0/conv/Conv") == ("model.0", "conv")
    assert scope_of("/model.77/m.0/Conv_output_0_nchwc") == ("model.77", "m.0")
    assert scope_of("/model.1/conv/Conv/WithoutBiases") == ("model.1", "conv")
    assert scope_of("/model.77/Concat_22") == ("model.77",)
    assert scope_of("images_abcd_acdb_/model.0/conv/Conv/WithoutBiases") == ()
    assert scope_of("ReorderOutput_token_144") == ()


def kernel(name: str, op: str, ts: int, dur: int) -> dict:
    return {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "dur": dur, "args": {"op_name": op}}


def run(ts: int, dur: int) -> dict:
    return {"cat": "Session", "name": "model_run", "ts": ts, "dur": dur, "args": {}}


@pytest.fixture
def ort_profile(tmp_path):
    events = [
        {"cat": "Session", "name": "session_initialization", "ts": 0, "dur": 900, "args": {}},
        run(1000, 500), kernel("/model.0/conv/Conv", "Conv", 1010, 400),  # the profiling session's warm-up
    ]
    for start in (2000, 3000):
        events += [
            run(start, 100),
            {"cat": "Node", "name": "/model.0/act/LeakyRelu_output_0_nchwc_fence_before", "ts": start + 1,
             "dur": 0, "args": {"op_name": "Conv"}},
            kernel("/model.0/act/LeakyRelu_output_0_nchwc", "Conv", start + 1, 30),  # Conv+LeakyRelu fused
            kernel("/model.77/m.0/Conv_output_0_nchwc", "Conv", start + 31, 20),
            kernel("/model.77/Sigmoid", "Sigmoid", start + 51, 5),
            kernel("/model.77/Concat_3", "Concat", start + 56, 4),
            kernel("/model.77/Concat_4", "Concat", start + 60, 6),
            kernel("ReorderOutput_token_7", "ReorderOutput", start + 66, 10),
        ]
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(events))
    return path


def test_onnxruntime_profile_to_rows(ort_profile):
    snapshot, source = onnxruntime_layers(ort_profile, forwards=2, images=4)
    assert source == SOURCE_ONNXRUNTIME and snapshot.forwards == 2 and snapshot.images == 4
    rows = by_path(snapshot)
    assert list(rows) == ["Pipeline", "Model", "model.0", "model.77/Concat", "model.77/Sigmoid", "model.77.m.0",
                          "Model/ReorderOutput", "Model/unattributed"]
    # The warm-up run (400 us at model.0.conv) is left out; the fused kernel is keyed at model.0.
    assert "model.0.conv" not in rows and rows["model.0"].type == "Conv" and rows["model.0"].parent == "Model"
    assert rows["model.0"].call_total_ns == (30 * US, 30 * US) and rows["model.0"].depth == 2
    assert rows["model.77/Concat"].total_ns == 20 * US and rows["model.77/Concat"].parent == "model.77"
    assert rows["model.77.m.0"].parent == "model.77" and rows["model.77.m.0"].depth == 3
    assert rows["Model"].call_total_ns == (100 * US, 100 * US)
    assert rows["Model/unattributed"].call_total_ns == (25 * US, 25 * US)  # model_run minus its kernels
    assert_adds_up(snapshot)


def test_onnxruntime_profile_shorter_than_the_pass_is_refused(ort_profile):
    with pytest.raises(ValueError, match="3 inference.*fewer than the 4 forward"):
        onnxruntime_layers(ort_profile, forwards=4, images=4)


def counter(inference: int, name: str, node_type: str, exec_type: str, us: float,
            status: str = "EXECUTED") -> NodeCounter:
    return NodeCounter(inference, name, node_type, exec_type, us, us, status)


def test_openvino_counters_to_rows():
    counters = []
    for inference in range(3):  # the first is left out: forwards=2
        counters += [
            counter(inference, "images", "Parameter", "unknown_f32", 0, "NOT_RUN"),
            counter(inference, "images_abcd_acdb_/model.0/conv/Conv/WithoutBiases", "Reorder", "jit_uni_f32", 3),
            counter(inference, "/model.0/conv/Conv/WithoutBiases", "Convolution", "brgconv_avx512_amx_bf16", 40),
            counter(inference, "/model.77/m.0/Conv/WithoutBiases", "Convolution", "brgconv_avx512_1x1_bf16", 9.5),
            counter(inference, "/model.77/m.0/Add", "Add", "jit_avx512_bf16", 2),
            counter(inference, "/model.77/Concat_1", "Concat", "ref_f32", 1),
        ]
    counters.append(counter(2, "/model.77/Concat_2", "Concat", "unknown_f32", 7))  # another kernel, same row
    snapshot, source = openvino_layers(counters, forwards=2, images=2)
    assert source == SOURCE_OPENVINO
    rows = by_path(snapshot)
    assert list(rows) == ["Pipeline", "Model", "model.0.conv", "model.77", "model.77.m.0/Add",
                          "model.77.m.0/Convolution", "Model/Reorder", "Model/unattributed"]
    assert rows["model.0.conv"].name == "brgconv_avx512_amx_bf16" and rows["model.0.conv"].type == "Convolution"
    assert rows["model.0.conv"].parent == "model.0" and rows["model.0.conv"].depth == 3
    assert rows["model.77"].name == "ref_f32+unknown_f32" and rows["model.77"].call_total_ns == (1 * US, 8 * US)
    assert rows["model.77.m.0/Convolution"].total_ns == 19 * US
    assert rows["Model/unattributed"].total_ns == 0  # OpenVINO reports nodes only
    assert rows["Model"].total_ns == 2 * 55.5 * US + 7 * US
    assert_adds_up(snapshot)


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
