"""ONNX Runtime's layer reader (pipelines/runtimes/onnxruntime/layers.py): a profile's kernels become rows keyed by
our module paths, the profiling session's warm-up left out, fused kernels at their module, and a profile shorter
than the pass refused."""
from __future__ import annotations

import json

import pytest

from pipelines.runtimes.onnxruntime.layers import SOURCE as SOURCE_ONNXRUNTIME
from tests.support.layer_rows import assert_adds_up, by_path, onnxruntime_layers


US = 1000  # ns per microsecond


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
