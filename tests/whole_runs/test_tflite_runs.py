"""TFLite files through the command line: an SSD ending in TFLite_Detection_PostProcess on LiteRT (the reference)
and on OpenVINO (which lacks the operator: the layout does its work) giving the same detections, and the files a
run refuses at start with one message, exit 2 and nothing written. Small files written here
(tests/support/tflite_models.py)."""
from __future__ import annotations

import csv
import json

import cv2
import numpy as np
import pytest

from benchmark import main
from tests.support.paths import ROOT
from tests.support.tflite_models import Graph, image_input, shifted_outputs, ssd_file

ANCHORS = np.array([[0.5, 0.5, 0.2, 0.2], [0.25, 0.25, 0.5, 0.5], [0.75, 0.75, 0.3, 0.4]], np.float32)
ENCODINGS = np.array([[0, 0, 0, 0], [1.0, -1.0, 0.5, 0.0], [0.2, 0.1, 0.0, 0.3]], np.float32)


def images(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir(exist_ok=True)
    for index, value in enumerate((40, 200)):
        cv2.imwrite(str(folder / f"scene{index}.png"), np.full((96, 128, 3), value, np.uint8))
    return folder


def args(tmp_path, file, run_id: str, *overrides: str) -> list[str]:
    listed = ["--config", str(ROOT / "configs" / "files.yaml"), "--set", f"model.file={file}",
              "--set", f"dataset.path={images(tmp_path)}", "--set", f"run.output_dir={tmp_path / 'out'}",
              "--set", f"run.id={run_id}", "--set", "benchmark.repeats=1", "--set", "outputs.save_images=false",
              "--set", "outputs.plots=false", "--set", "outputs.report=false"]
    for override in overrides:
        listed += ["--set", override]
    return listed


def detections(run) -> list[tuple]:
    with (run / "detections.csv").open(newline="") as handle:
        return [(row["image"], row["class_id"], round(float(row["score"]), 4),
                 *(round(float(row[key]), 2) for key in ("x1", "y1", "x2", "y2"))) for row in csv.DictReader(handle)]


@pytest.mark.slow
def test_an_ssd_runs_on_litert_and_on_openvino_with_the_same_detections(tmp_path):
    logits = np.full((3, 91), -6.0, np.float32)
    logits[0, 1], logits[1, 3], logits[2, 18] = 2.0, -1.0, 1.0  # person, car, dog (COCO ids 1, 3, 18)
    file = ssd_file(tmp_path / "ssd.tflite", ENCODINGS, logits, ANCHORS, gain=0.02, output_order=(2, 0, 3, 1))
    assert main(args(tmp_path, file, "litert", "runtime.backend=litert")) == 0
    assert main(args(tmp_path, file, "openvino", "runtime.backend=openvino")) == 0
    on_litert, on_openvino = detections(tmp_path / "out" / "litert"), detections(tmp_path / "out" / "openvino")
    assert on_litert == on_openvino and len(on_litert) == 4  # person and dog in each; car under the cut 0.4
    assert {row[1] for row in on_litert} == {"0", "16"}
    litert = json.loads((tmp_path / "out" / "litert" / "summary.json").read_text())
    openvino = json.loads((tmp_path / "out" / "openvino" / "summary.json").read_text())
    assert litert["runtime"]["file_precision"]["input"] == "uint8"
    assert openvino["runtime"]["ends_before"]["operator"] == "TFLite_Detection_PostProcess"
    assert any("layer timing skipped: litert" in warning and "no operator profiler" in warning
               for warning in litert["warnings"])
    assert openvino["agreement"]["verdict"] == "equal"


def refused(tmp_path, capsys, file, *overrides: str) -> str:
    assert main(args(tmp_path, file, "refused", *overrides)) == 2
    assert not (tmp_path / "out" / "refused").exists(), "a refused file leaves no run directory"
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "Traceback" not in error and len(error) < 1500
    return error


@pytest.mark.slow
def test_files_that_cannot_run_are_refused_at_start_naming_the_file_and_the_fix(tmp_path, capsys):
    whole = ssd_file(tmp_path / "whole.tflite", ENCODINGS, np.zeros((3, 4), np.float32), ANCHORS)
    (tmp_path / "cut.tflite").write_bytes(whole.read_bytes()[: len(whole.read_bytes()) * 2 // 3])
    assert "is not a readable TFLite model" in refused(tmp_path, capsys, tmp_path / "cut.tflite",
                                                       "runtime.backend=litert")
    (tmp_path / "page.tflite").write_bytes(b"<!doctype html><title>404</title>")
    assert "is not a TFLite model" in refused(tmp_path, capsys, tmp_path / "page.tflite", "runtime.backend=litert")
    custom = ssd_file(tmp_path / "custom.tflite", ENCODINGS, np.zeros((3, 4), np.float32), ANCHORS,
                      custom_code="EdgeTpuCustomOp")
    message = refused(tmp_path, capsys, custom, "runtime.backend=openvino")
    assert "custom operator(s) EdgeTpuCustomOp, which neither LiteRT nor OpenVINO has" in message
    graph = Graph()
    image = image_input(graph, (1, 32, 32, 3), "int16", (1.0, 0))
    out = graph.tensor("out", (1, 6, 10))
    (tmp_path / "int16.tflite").write_bytes(graph.serialised([image], [out]))
    message = refused(tmp_path, capsys, tmp_path / "int16.tflite", "runtime.backend=litert")
    assert "takes int16; detbench feeds an image as float32, float16, uint8, int8" in message
    nothing = shifted_outputs(tmp_path / "nothing.tflite", [np.zeros((1, 3)), np.zeros((1, 2))], ["a", "b"],
                              (1, 32, 32, 3))
    message = refused(tmp_path, capsys, nothing, "runtime.backend=litert")
    assert "inputs images [1, 32, 32, 3] and outputs a [1, 3], b [1, 2]" in message and "adding-a-layout" in message


@pytest.mark.slow
def test_a_runtime_or_precision_that_cannot_run_a_tflite_is_refused_with_what_can(tmp_path, capsys):
    file = ssd_file(tmp_path / "ssd.tflite", ENCODINGS, np.zeros((3, 4), np.float32), ANCHORS)
    message = refused(tmp_path, capsys, file, "runtime.backend=onnxruntime")
    assert "a TFLite file is read by runtime.backend openvino or litert" in message
    message = refused(tmp_path, capsys, file, "runtime.backend=openvino", "runtime.precision=int8")
    assert "a .tflite runs as it is" in message and "onnx2tf" in message
    message = refused(tmp_path, capsys, file, "runtime.backend=litert", "runtime.precision=int8")
    assert "runtime.backend litert runs precision fp32" in message and "onnx2tf" in message
    yolo = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "runtime.backend=litert",
            "--set", f"run.output_dir={tmp_path / 'out'}", "--set", "run.id=refused"]
    assert main(yolo) == 2 and not (tmp_path / "out" / "refused").exists()
    assert "has no exporter for a network built in torch" in capsys.readouterr().err
