"""What a file run says when the file is not what it seems: a layout taken by assumption that decodes nonsense,
a file the runtime refuses, a file added to a YOLO config. Small hand-built ONNX graphs (tests/pipelines/exported/test_exported.py)."""
from __future__ import annotations

import json

import onnx
import pytest
import torch
from onnx import TensorProto, helper

from benchmark import main
from tests.support.paths import ROOT
from tests.pipelines.exported.test_exported import SIDE, export, square_image


def refused_by_the_run(tmp_path, capsys, file, *overrides: str) -> str:
    args = ["--config", str(ROOT / "configs" / "files.yaml"), "--set", f"model.file={file}",
            "--set", f"dataset.path={square_image(tmp_path)}", "--set", f"run.output_dir={tmp_path / 'out'}",
            "--set", "run.id=refused", "--set", "benchmark.repeats=1", "--set", "benchmark.layer_timing=false"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 2
    assert not (tmp_path / "out" / "refused").exists(), "a refused file leaves no run directory"
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "Traceback" not in error and len(error) < 1200
    return error


def graph_file(tmp_path, name: str, node: onnx.NodeProto, opsets, image_type=TensorProto.FLOAT) -> str:
    """One node from `images` to a (1, 7, 100) output: enough to be read as a YOLOv8 layout."""
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("images", image_type, [1, 3, SIDE, SIDE])],
                              [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, 7, 100])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, version) for domain, version in opsets])
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


@pytest.mark.slow
def test_an_assumed_layout_that_decodes_nothing_says_so_and_names_model_head(tmp_path):
    # (B, N, 5 + C) with N beyond a DETR's queries and no metadata: read as yolov5 by assumption; zero scores.
    file = export(tmp_path, "silent", torch.zeros(1, 1200, 5 + 3))
    args = ["--config", str(ROOT / "configs" / "files.yaml"), "--set", f"model.file={file}",
            "--set", f"dataset.path={square_image(tmp_path)}", "--set", f"run.output_dir={tmp_path / 'out'}",
            "--set", "run.id=assumed", "--set", "benchmark.repeats=1", "--set", "benchmark.layer_timing=false"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "out" / "assumed" / "summary.json").read_text())
    doubts = [warning for warning in summary["warnings"] if "taken by assumption" in warning]
    assert len(doubts) == 1 and "no score passed the cut in any of" in doubts[0]
    assert "set model.head" in doubts[0] and "layout yolov5" in doubts[0]


@pytest.mark.slow
def test_a_layout_the_file_names_is_not_doubted(tmp_path):
    file = export(tmp_path, "named", torch.zeros(1, 1200, 5 + 3), metadata={"names": {0: "a", 1: "b", 2: "c"}})
    args = ["--config", str(ROOT / "configs" / "files.yaml"), "--set", f"model.file={file}",
            "--set", f"dataset.path={square_image(tmp_path)}", "--set", f"run.output_dir={tmp_path / 'out'}",
            "--set", "run.id=named", "--set", "benchmark.repeats=1", "--set", "benchmark.layer_timing=false"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "out" / "named" / "summary.json").read_text())
    assert not [warning for warning in summary["warnings"] if "taken by assumption" in warning]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_an_operator_of_a_custom_domain_is_refused_by_the_runtime_in_one_message(tmp_path, capsys, backend):
    node = helper.make_node("Mystery", ["images"], ["output0"], domain="com.example")
    file = graph_file(tmp_path, "custom", node, [("", 17), ("com.example", 1)])
    error = refused_by_the_run(tmp_path, capsys, file, f"runtime.backend={backend}")
    assert f"model.file {file}: {backend} (" in error and "cannot run it" in error and "another runtime.backend" in error


@pytest.mark.slow
def test_an_opset_the_runtime_lacks_is_refused_by_the_runtime(tmp_path, capsys):
    node = helper.make_node("Identity", ["images"], ["output0"])
    file = graph_file(tmp_path, "future", node, [("", 99)])
    error = refused_by_the_run(tmp_path, capsys, file)
    assert f"model.file {file}: onnxruntime (ONNX Runtime " in error and "cannot run it" in error


def test_an_image_input_of_another_type_is_refused_before_any_runtime(tmp_path, capsys):
    node = helper.make_node("Cast", ["images"], ["output0"], to=TensorProto.FLOAT)
    file = graph_file(tmp_path, "int64", node, [("", 17)], image_type=TensorProto.INT64)
    error = refused_by_the_run(tmp_path, capsys, file)
    assert "takes int64; detbench feeds an image as float32, float16, uint8, int8" in error


def test_external_data_outside_the_files_folder_is_refused(tmp_path, capsys):
    whole = export(tmp_path, "whole", torch.zeros(1, 7, 100))
    inside = tmp_path / "model"
    inside.mkdir()
    file = inside / "escapes.onnx"
    model = onnx.load(str(whole))
    onnx.save_model(model, str(file), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="escapes.data", size_threshold=0)
    (inside / "escapes.data").rename(tmp_path / "escapes.data")
    model = onnx.load(str(file), load_external_data=False)
    for tensor in model.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../escapes.data"
    onnx.save(model, str(file))
    error = refused_by_the_run(tmp_path, capsys, file)
    assert str(file) in error and "outside" in error and "onnxruntime" not in error.lower().split("model.file")[0]


def test_a_file_added_to_a_yolo_config_is_pointed_to_the_files_config(tmp_path, capsys):
    file = export(tmp_path, "plain", torch.zeros(1, 7, 100))
    args = ["--config", str(ROOT / "configs" / "samples.yaml"), "--set", f"model.file={file}",
            "--set", f"run.output_dir={tmp_path / 'out'}"]
    assert main(args) == 2
    error = capsys.readouterr().err
    assert "belongs to the yolo family" in error and "start from configs/files.yaml" in error
    assert not (tmp_path / "out").exists()
