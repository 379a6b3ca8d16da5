"""Per-layer snapshots as the tests of runtimes' layer readers (pipelines/runtimes/<name>/layers.py) and of
utils/measure/layers/runtime_layers.py judge them: by path, and adding up to the Model row."""
from __future__ import annotations

import pytest

from pipelines.runtimes.onnxruntime import layers as ort_layers
from pipelines.runtimes.openvino import layers as ov_layers
from utils.measure.layers.runtime_layers import layer_timing
from utils.measure.layers.tables import layer_types_frame
from utils.record.layers import KIND_LAYER, MODEL_FORWARD_KINDS, TimingSnapshot


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


def onnxruntime_layers(profile_json_path, forwards: int, images: int):
    """A profile through ONNX Runtime's layer reader, then into rows."""
    return layer_timing(ort_layers.node_runs(profile_json_path, forwards), images)


def openvino_layers(counters, forwards: int, images: int):
    """Counters through OpenVINO's layer reader, then into rows."""
    return layer_timing(ov_layers.node_runs(counters, forwards), images)
