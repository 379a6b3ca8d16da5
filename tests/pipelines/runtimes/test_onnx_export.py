"""ONNX export: a cached file keyed by what determines it, written atomically, from a copy of the network."""
from __future__ import annotations

import json

import onnx
import pytest
import torch
from torch import nn

from models import is_fused
from pipelines.contract import LoadedNetwork
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.onnx_export import INPUT_NAME, OUTPUT_NAME, export_key_parts, export_onnx
from pipelines.yolo.family import load_network

SIZE = 96


@pytest.fixture(scope="module")
def example():
    return torch.zeros(1, 3, SIZE, SIZE)


@pytest.fixture(scope="module")
def exported(network, example, tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("onnx-cache")
    return cache_dir, export_onnx(network, example, cache_dir)


def test_first_call_exports_and_second_call_hits_the_cache(network, example, exported):
    cache_dir, first = exported
    assert not first.cache_hit and first.seconds > 0 and first.path.is_file()
    before = first.path.stat()
    data = first.path.read_bytes()
    second = export_onnx(network, example, cache_dir)
    assert second.cache_hit and second.seconds < 0.05
    assert second.path == first.path and second.key == first.key
    assert first.path.stat().st_mtime_ns == before.st_mtime_ns and first.path.read_bytes() == data
    # Another batch and spatial size of the same rank is the same file: those axes are dynamic.
    assert export_onnx(network, torch.zeros(3, 3, 64, 160), cache_dir).cache_hit


def test_cache_leaves_only_the_file_its_sidecar_and_its_checksum_record(exported):
    cache_dir, result = exported
    assert sorted(path.name for path in cache_dir.iterdir()) == sorted([
        result.path.name, result.path.with_suffix(".json").name, result.path.name + ".check.json"])
    parts = json.loads(result.path.with_suffix(".json").read_text())
    assert parts["network"].startswith("yolo:yolov7-tiny.yaml:")
    assert parts["fuse"] == "True" and parts["opset"] == "17" and parts["input_rank"] == "4"
    assert parts["torch"] == torch.__version__ and parts["onnx"] == onnx.__version__
    assert all(f"{name}={value}" in result.key for name, value in parts.items())


@pytest.mark.slow
def test_key_changes_with_what_determines_the_file(network, example):
    base = export_key_parts(network, example, 17, True)
    assert export_key_parts(network, torch.zeros(2, 3, 64, 64), 17, True) == base
    assert export_key_parts(network, example, 18, True) != base
    assert export_key_parts(network, example, 17, False) != base
    assert export_key_parts(network, example[0], 17, True) != base
    other = load_network("yolov7-tiny", None, seed=1)
    assert export_key_parts(other, example, 17, True) != base


def test_graph_has_named_io_with_dynamic_axes(exported):
    graph = onnx.load(str(exported[1].path)).graph
    (images,), (prediction,) = graph.input, graph.output
    assert images.name == INPUT_NAME and prediction.name == OUTPUT_NAME
    in_dims = [dim.dim_param or dim.dim_value for dim in images.type.tensor_type.shape.dim]
    out_dims = [dim.dim_param or dim.dim_value for dim in prediction.type.tensor_type.shape.dim]
    assert in_dims == ["batch", 3, "height", "width"]
    assert out_dims[:2] == ["batch", "candidates"]
    assert any(node.name == "/model.0/conv/Conv" for node in graph.node)


def test_export_leaves_the_network_untouched(network, exported):
    # Exported from a fused deep copy: the network the torch runtime keeps using is neither fused nor traced.
    assert not is_fused(network.module)


class Untraceable(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("no forward for you")


def test_failed_export_names_the_network_and_leaves_no_file(tmp_path, example):
    broken = LoadedNetwork(Untraceable(), ["a"], "random (seed 0)", True, cache_key="test:untraceable")
    with pytest.raises(RuntimeNotSupported, match=r"Untraceable network test:untraceable failed: "
                                                  r"ValueError: no forward for you"):
        export_onnx(broken, example, tmp_path)
    assert not list(tmp_path.glob("*.onnx*"))


def test_killed_export_leaves_no_cache_entry(network, example, tmp_path, monkeypatch):
    def killed(module, args, path, **kwargs):
        with open(path, "wb") as stream:
            stream.write(b"half a model")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch.onnx, "export", killed)
    with pytest.raises(KeyboardInterrupt):
        export_onnx(network, example, tmp_path)
    assert not list(tmp_path.glob("*.onnx*")) and not list(tmp_path.glob(".*partial"))
