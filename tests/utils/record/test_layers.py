"""Layer timing as plain data (utils/record/layers.py): a call path's times in milliseconds and its FLOPs as twice its
MACs; a snapshot's model, unattributed and pipeline totals by kind, FLOPs per forward and per image."""
import pytest

from utils.record.layers import (KIND_LAYER, KIND_MODEL, KIND_PIPELINE, KIND_UNATTRIBUTED, LayerProfile, LayerRecord,
                                 PathMemory, TimingSnapshot, flops_from_macs)


def layer(path, kind, total_ms, self_ms=None, calls=2, macs_total=0) -> LayerRecord:
    total, own = int(total_ms * 1e6), int((total_ms if self_ms is None else self_ms) * 1e6)
    return LayerRecord(path, path, "Conv2d", kind, 1, "Model", calls, total, own, (total // 2,) * 2, (own // 2,) * 2,
                       10, macs_total, None, None)


def test_a_call_path_in_milliseconds_and_flops():
    conv = layer("model.0.conv", KIND_LAYER, 3.0, self_ms=1.0, calls=4, macs_total=1000)
    assert (conv.total_ms, conv.self_ms, conv.child_ms) == (3.0, 1.0, 2.0)
    assert conv.macs == 250 and conv.flops == 500 and conv.flops_total == 2000 == flops_from_macs(1000)
    assert layer("never", KIND_LAYER, 0.0, calls=0).macs == 0.0


def test_a_snapshot_sums_by_kind_and_counts_flops_per_forward_and_image():
    snapshot = TimingSnapshot((layer("Pipeline", KIND_PIPELINE, 10.0), layer("Model", KIND_MODEL, 8.0),
                               layer("model.0", KIND_LAYER, 5.0, macs_total=300),
                               layer("model.1", KIND_LAYER, 2.5, macs_total=100),
                               layer("Model/unattributed", KIND_UNATTRIBUTED, 0.5)), forwards=2, images=4,
                              warnings=())
    assert (snapshot.pipeline_total_ms, snapshot.model_total_ms, snapshot.unattributed_ms) == (10.0, 8.0, 0.5)
    assert snapshot.macs_total == 400 and snapshot.macs_per_forward == 200 and snapshot.flops_per_forward == 400
    assert snapshot.flops_per_image == pytest.approx(200.0)
    empty = TimingSnapshot((), forwards=0, images=0, warnings=())
    assert empty.macs_per_forward == 0.0 and empty.flops_per_image is None


def test_a_profile_finds_each_paths_memory():
    first = PathMemory("model.0", 1, 100, 200, 50, 60, 32.0)
    profile = LayerProfile((first, PathMemory("model.1", 1, 0, 0, 0, 0, None)), ())
    assert profile.memory_by_path()["model.0"] is first and set(profile.memory_by_path()) == {"model.0", "model.1"}
