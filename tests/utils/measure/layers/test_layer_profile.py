"""Memory and operators per call path: the attribution math on hand-built events, then real profiled runs of
yolov7-tiny through its pipeline and of a torchvision detector called directly."""
from __future__ import annotations

import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")

import io

import cv2
import pandas as pd
import pytest
import torch
import torchvision

from pipelines.runtimes.registry import build_runtime
from tests.support.helpers import Net
from tests.support.paths import SAMPLES, TINY_CONFIG
from utils.measure.layers.layer_profile import Allocation, Span, attribute
from utils.record.layers import LayerProfile, PathMemory, PathOp
from utils.measure.layers.tables import (LAYER_MEMORY_COLUMNS, LAYER_OPS_COLUMNS, LAYER_TIMER_COLUMNS, layer_ops_frame,
                                       layer_timer_frame, layer_tree_text, top_self_frame)
from utils.measure.layers.model_timing import ModelTiming
from utils.measure.layers.profiler import output_nbytes, profile_pipeline


def op(name: str, start: int, end: int, thread: int = 1) -> Span:
    return Span(name, thread, start, end, False, "[[1]]")


def call(path: str, start: int, end: int, thread: int = 1) -> Span:
    return Span(path, thread, start, end, True)


NESTED = [
    call("Model", 0, 100),
    call("a", 10, 40), op("aten::conv2d", 12, 38), op("aten::mkldnn_convolution", 15, 35),
    call("b", 50, 90), op("aten::relu", 55, 60),
    op("aten::cat", 92, 98),
    op("aten::outside", 120, 130),  # in no call path: left out
]
ALLOCATIONS = [
    Allocation(20, 1000), Allocation(25, -200),  # a: a workspace freed, an output kept
    Allocation(40, 7),  # on a's end: inside a (and Model), as torch.profiler counts it
    Allocation(56, 300),  # b
    Allocation(95, 50), Allocation(96, -400),  # Model itself: an allocation, and a freed input
    Allocation(150, 999),  # after every range
]


def test_nested_ranges_self_and_total():
    profile = attribute(NESTED, ALLOCATIONS, {"a": [64, 128], "b": [32]})
    memory = profile.memory_by_path()
    assert [row.path for row in profile.memory] == ["Model", "a", "b"]  # first-call order
    a, b, model = memory["a"], memory["b"], memory["Model"]
    assert (a.alloc_total_bytes, a.alloc_self_bytes, a.net_total_bytes, a.net_self_bytes) == (1007, 1007, 807, 807)
    assert (b.alloc_total_bytes, b.alloc_self_bytes, b.net_total_bytes, b.net_self_bytes) == (300, 300, 300, 300)
    assert model.alloc_total_bytes == 1007 + 300 + 50 and model.alloc_self_bytes == 50
    assert model.net_total_bytes == 807 + 300 + 50 - 400 and model.net_self_bytes == 50 - 400
    assert a.output_bytes == 96 and b.output_bytes == 32 and model.output_bytes is None
    assert all(row.calls == 1 for row in profile.memory)


def test_operators_belong_to_the_innermost_call_path():
    ops = {(row.path, row.op): row for row in attribute(NESTED, ALLOCATIONS).ops}
    assert set(ops) == {("a", "aten::conv2d"), ("a", "aten::mkldnn_convolution"), ("b", "aten::relu"),
                        ("Model", "aten::cat")}
    conv = ops[("a", "aten::conv2d")]
    assert (conv.calls, conv.total_ns, conv.self_ns) == (1, 26, 26 - 20)  # its nested op's time is not its own
    assert ops[("a", "aten::mkldnn_convolution")].self_ns == 20
    assert ops[("Model", "aten::cat")].self_ns == 6 and ops[("b", "aten::relu")].self_ns == 5


def test_repeated_calls_sum_and_threads_stay_apart():
    spans = [call("loop", 0, 10), op("aten::add", 1, 3), call("loop", 20, 30), op("aten::add", 21, 25),
             op("aten::mul", 22, 24, thread=2)]  # another thread: not inside "loop", which runs on thread 1
    profile = attribute(spans, [Allocation(2, 16), Allocation(22, 16), Allocation(15, 100)], {"loop": [8, 8]})
    loop = profile.memory_by_path()["loop"]
    assert (loop.calls, loop.alloc_total_bytes, loop.alloc_self_bytes, loop.output_bytes) == (2, 32, 32, 8)
    (add,) = profile.ops
    assert (add.path, add.op, add.calls, add.self_ns) == ("loop", "aten::add", 2, 2 + 4)


def test_output_bytes_walks_containers_once():
    tensor = torch.zeros(2, 3)  # 24 bytes
    image_list = type("ImageList", (), {})()
    image_list.tensors, image_list.image_sizes = torch.zeros(4, dtype=torch.float64), [(1, 2)]
    assert output_nbytes(tensor) == 24
    assert output_nbytes((tensor, [tensor, {"boxes": torch.zeros(5, dtype=torch.uint8)}])) == 24 + 5
    assert output_nbytes(image_list) == 32 and output_nbytes(None) == 0


class Halve:
    def __call__(self, y: torch.Tensor) -> torch.Tensor:
        return y / 2


def test_join_gives_the_model_root_share_to_unattributed_and_sums_groups():
    model, post = Net().eval(), Halve()
    with ModelTiming(model, post_transforms=[post]) as timing:
        post(model(torch.zeros(1, 3, 8, 8)))
    memory = (PathMemory("Model", 1, 10, 110, -5, 45, 64.0), PathMemory("backbone", 1, 0, 60, 0, 30, 128.0),
              PathMemory("backbone.0", 1, 60, 60, 30, 30, 128.0), PathMemory("head", 1, 40, 40, 20, 20, 64.0),
              PathMemory("Postprocessing/Halve", 1, 8, 8, 8, 8, 64.0))
    ops = (PathOp("Model", "aten::sigmoid", 1, 2_000_000, 2_000_000, "[[1, 2, 8, 8]]"),
           PathOp("head", "aten::conv2d", 1, 500_000, 3_000_000, "[[1, 4, 8, 8]]"))
    frame = layer_timer_frame(timing.snapshot(), profile=LayerProfile(memory, ops)).set_index("path")
    assert frame.loc["Model", ["alloc_self_bytes", "alloc_total_bytes", "net_self_bytes"]].tolist() == [0, 110, 0]
    unattributed = frame.loc["Model/unattributed"]
    assert (unattributed["alloc_self_bytes"], unattributed["alloc_total_bytes"], unattributed["net_total_bytes"]) == (
        10, 10, -5)
    assert frame.loc["backbone.1", LAYER_MEMORY_COLUMNS].isna().all()  # not reached by the profiled batch
    assert frame.loc["Postprocessing", "alloc_total_bytes"] == 8
    assert frame.loc["Pipeline", ["alloc_total_bytes", "net_total_bytes", "alloc_self_bytes"]].tolist() == [118, 53, 0]
    assert frame.loc["backbone", "output_bytes"] == 128
    ops_frame = layer_ops_frame(LayerProfile(memory, ops))
    assert ops_frame["path"].tolist() == ["Model/unattributed", "head"]
    assert ops_frame["self_cpu_ms"].tolist() == [2.0, 0.5] and ops_frame["total_cpu_ms"].tolist() == [2.0, 3.0]


def check_memory_columns(timer: pd.DataFrame) -> None:
    measured = timer.dropna(subset=["alloc_total_bytes"])
    assert len(measured) > 0
    assert (measured["alloc_self_bytes"] >= 0).all() and (measured["alloc_total_bytes"] >= 0).all()
    assert (measured["alloc_total_bytes"] >= measured["alloc_self_bytes"]).all()
    children = measured.groupby("parent")["alloc_total_bytes"].sum()
    for _, row in measured.iterrows():  # a container's total holds its children's and its own
        if row["path"] in children.index and not row["path"].endswith("unattributed"):
            assert row["alloc_total_bytes"] >= children[row["path"]] + row["alloc_self_bytes"] - 1


@pytest.fixture(scope="module")
def tiny_yolo():
    from pipelines.registry import family_for
    from utils.config.schema import load_config

    config = load_config(TINY_CONFIG)
    preprocess = config.preprocess.model_copy(update={"img_size": 128})
    family = family_for("yolov7-tiny")
    network = family.load_network("yolov7-tiny", None, 0)
    pipeline = family.build_pipeline(network, build_runtime("torch").prepare(network, family.example_input(preprocess)),
                                     preprocess, config.postprocess)
    targets = pipeline.layer_timing_targets()
    image = cv2.imread(os.path.join(SAMPLES, "dog.jpg"))
    with ModelTiming(targets.model, targets.pre_transforms, targets.post_transforms) as timing:
        pipeline([image])
    result = profile_pipeline(lambda: pipeline([image]), targets.model, targets.pre_transforms,
                              targets.post_transforms)
    return timing.snapshot(), result.layers


def test_yolov7_tiny_layer_memory_and_ops(tiny_yolo):
    snapshot, layers = tiny_yolo
    timer = pd.read_csv(io.StringIO(layer_timer_frame(snapshot, profile=layers).to_csv(index=False)))
    assert list(timer.columns) == LAYER_TIMER_COLUMNS
    check_memory_columns(timer)
    rows = timer.set_index("path")
    assert rows.loc["Model", "alloc_self_bytes"] == 0 and rows.loc["Model/unattributed", "alloc_total_bytes"] >= 0
    # The first conv's output: 32 channels at half of 128, float32.
    assert rows.loc["model.0.conv", "output_bytes"] == 32 * 64 * 64 * 4 == rows.loc["model.0", "output_bytes"]
    assert rows.loc["model.0.conv", "alloc_self_bytes"] >= 32 * 64 * 64 * 4
    assert rows.loc["Pipeline", "alloc_total_bytes"] == sum(
        rows.loc[group, "alloc_total_bytes"] for group in ("Preprocessing", "Model", "Postprocessing"))
    ops = layer_ops_frame(layers)
    assert list(ops.columns) == LAYER_OPS_COLUMNS
    conv_ops = set(ops[ops["path"] == "model.0.conv"]["op"])
    assert "aten::conv2d" in conv_ops and conv_ops <= {op for op in ops["op"] if op.startswith("aten::")}
    assert rows.loc["model.0", "type"] == "Conv" and "model.0" not in set(ops["path"])  # Conv's ops are its children's
    assert (ops["self_cpu_ms"] >= 0).all() and (ops["total_cpu_ms"] >= ops["self_cpu_ms"] - 1e-9).all()
    assert set(ops["path"]) <= set(timer["path"])


def test_tree_and_top_table_show_memory(tiny_yolo):
    snapshot, layers = tiny_yolo
    tree = layer_tree_text(snapshot, profile=layers).splitlines()
    assert tree[0].split()[3:6] == ["alloc_MiB", "self_MiB", "out_MiB"]
    conv_line = next(line for line in tree if line.strip().endswith("model.0.conv [Conv2d]"))
    assert float(conv_line.split()[5]) == pytest.approx(0.5)  # out_MiB: 32 x 64 x 64 float32
    top = top_self_frame(snapshot, top=5, profile=layers)
    assert {"alloc_self_mib", "output_mib"} <= set(top.columns) and top["alloc_self_mib"].notna().all()
    plain = layer_timer_frame(snapshot)
    assert plain[LAYER_MEMORY_COLUMNS].isna().all().all()  # profiler off: the columns are there, empty


@pytest.mark.slow
def test_torchvision_detector_through_the_recorder():
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=3, min_size=128, max_size=128).eval()
    images = [torch.rand(3, 96, 128)]
    with torch.inference_mode(), ModelTiming(model) as timing:
        model(images)
    with torch.inference_mode():
        result = profile_pipeline(lambda: model(images), model)
    timer = layer_timer_frame(timing.snapshot(), profile=result.layers)
    check_memory_columns(timer)
    rows = timer.set_index("path")
    assert rows.loc["backbone.body", "output_bytes"] > 0  # an OrderedDict of feature maps
    assert rows.loc["transform", "output_bytes"] > 0  # an ImageList and a list of targets
    assert rows.loc["backbone", "alloc_total_bytes"] >= rows.loc["backbone.body", "alloc_total_bytes"]
    ops = layer_ops_frame(result.layers)
    assert "aten::conv2d" in set(ops[ops["path"] == "backbone.body.0.0"]["op"])
    assert "torchvision::roi_align" in set(ops[ops["path"].str.startswith("roi_heads.box_roi_pool")]["op"])
