"""The exported family (pipelines/exported/family.py): what it loads of a user's ONNX or OpenVINO file (class
names, the weights line, the cache key, the record of what was read), the files it refuses and what it says of
them, the facts it answers for the harness, and the pipeline it builds (letterbox or stretch by layout, the
file's forward faked with fixed outputs, boxes hand-computed). Small graphs are written here with onnx.helper
(only their declared shapes are read; nothing runs them); the real Ultralytics exports in shared/data/ultra
where they are present."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from models.yolo import coco_names
from pipelines.cache_keys import file_digest
from pipelines.exported import family
from pipelines.exported.inspection import ExportedFileError
from pipelines.exported.preparing import Prepare, Restore
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo.stages import PIXEL_SCALE
from tests.support.paths import ROOT

ULTRA = ROOT.parent / "shared" / "data" / "ultra"
needs_ultra = pytest.mark.skipif(not ULTRA.is_dir(), reason=f"{ULTRA} (the shared exported files) is not here")
DYNAMIC = ["batch", 3, "height", "width"]
YOLOV8_WHY = "output (B, 4 + C, N): channels before anchors"


def onnx_file(folder: Path, name: str, outputs: dict[str, list], metadata: dict | None = None,
              inputs: dict[str, list] | None = None) -> Path:
    """A graph whose declared inputs and outputs are these (each output made by a Constant node)."""
    nodes = [helper.make_node("Constant", [], [output], value=helper.make_tensor(f"{output}_value", TensorProto.FLOAT,
                                                                                  [1], [0.0]))
             for output in outputs]
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(key, TensorProto.FLOAT, shape)
                      for key, shape in (inputs or {"images": DYNAMIC}).items()],
        [helper.make_tensor_value_info(key, TensorProto.FLOAT, shape) for key, shape in outputs.items()])
    model = helper.make_model(graph)
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=str(value))
    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def preprocess(img_size: int = 64, source: Path | None = None):
    """The preprocess section as a config resolves it: the file's layout's recipe (YOLO's without a file)."""
    recipe = family.defaults(str(source)).preprocess if source is not None else {"mean": [0.0] * 3, "std": [1.0] * 3}
    return SimpleNamespace(**{**recipe, "img_size": img_size})


def postprocess(**changes):
    return SimpleNamespace(**{"conf_thres": 0.25, "iou_thres": 0.7, "max_det": 300, **changes})


def fixed(*outputs: torch.Tensor, dtype=torch.float32) -> PreparedForward:
    """The file's forward, faked: its outputs whatever the batch."""
    def run(batch: torch.Tensor):
        assert batch.dtype == dtype
        return outputs[0] if len(outputs) == 1 else outputs

    return PreparedForward(run, None, dtype)


# --- what it loads -----------------------------------------------------------------------------------------------

def test_a_plain_export_loads_as_a_file_with_numbers_for_names(tmp_path):
    path = onnx_file(tmp_path, "v8", {"output0": [1, 7, 100]})
    network = family.load_network(str(path), "ignored.pt", seed=5)
    digest = file_digest(path)
    assert network.module is None and network.random_weights is False and network.fuse is None
    assert network.class_names == ["0", "1", "2"]  # 4 + 3 rows, no names in the metadata
    assert network.weights == f"file v8.onnx (onnx, layout yolov8: {YOLOV8_WHY})"
    assert network.cache_key == f"exported:{digest}" and network.arch == str(path) and network.file == path
    assert network.pixel_scale == PIXEL_SCALE == 255.0  # letterboxed: the input is the pixels over 255
    assert network.description == {"file": str(path), "format": "onnx", "digest": digest, "layout": "yolov8",
                                   "read_from": YOLOV8_WHY, "assumed": False, "classes": 3,
                                   "inputs": [["images", DYNAMIC, "float32"]],
                                   "outputs": [["output0", [1, 7, 100], "float32"]], "metadata_keys": []}


def test_eighty_classes_without_names_are_cocos(tmp_path):
    network = family.load_network(str(onnx_file(tmp_path, "coco", {"output0": [1, 84, 2100]})), None, 0)
    assert network.class_names == coco_names() and network.class_names[9] == "traffic light"


def test_the_metadata_names_the_classes(tmp_path):
    path = onnx_file(tmp_path, "named", {"output0": [1, 6, 100]}, {"names": "{0: 'cat', 1: 'dog'}", "author": "me"})
    network = family.load_network(str(path), None, 0)
    assert network.class_names == ["cat", "dog"]
    assert network.description["metadata_keys"] == ["author", "names"]


def test_a_detr_file_is_stretched_not_letterboxed(tmp_path):
    path = onnx_file(tmp_path, "detr", {"boxes": [1, 100, 4], "logits": [1, 100, 3]})
    network = family.load_network(str(path), None, 0)
    assert network.pixel_scale is None and network.class_names == ["0", "1", "2"]
    assert network.weights == "file detr.onnx (onnx, layout detr: two outputs: boxes (B, Q, 4) and class logits)"


def test_model_head_decides_an_ambiguous_layout(tmp_path):
    path = onnx_file(tmp_path, "open", {"output0": [1, 300, 8]})
    with pytest.raises(ExportedFileError, match="could be more than one layout"):
        family.load_network(str(path), None, 0)
    told = family.load_network(str(path), None, 0, SimpleNamespace(head="rtdetr"))
    assert told.arch == str(path) and told.file == path
    assert told.description["layout"] == "rtdetr"
    assert told.description["read_from"] == "model.head (output (B, Q, 4 + C) assumed)"
    assert told.class_names == ["0", "1", "2", "3"]  # 4 + 4 values per query
    assert told.pixel_scale == PIXEL_SCALE  # Ultralytics' RT-DETR takes RGB over 255, as its YOLOs do


# --- the files it refuses ----------------------------------------------------------------------------------------

def test_what_is_not_an_exported_detector_is_refused_naming_the_file(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(ExportedFileError, match=f"model.file {missing}: no such file"):
        family.load_network(str(missing), None, 0)
    pickle = tmp_path / "best.pt"
    pickle.write_bytes(b"\x80\x04")
    with pytest.raises(ExportedFileError, match="is a PyTorch checkpoint.*yolo export model=best.pt format=onnx"):
        family.load_network(str(pickle), None, 0)
    text = tmp_path / "model.txt"
    text.write_text("not a model")
    with pytest.raises(ExportedFileError, match=r"model.txt: not an ONNX \(.onnx\), OpenVINO IR \(.xml\) or TFLite"):
        family.load_network(str(text), None, 0)


def test_a_broken_file_is_named_and_left_as_it_is(tmp_path):
    whole = onnx_file(tmp_path, "whole", {"output0": [1, 7, 100]})
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(whole.read_bytes()[:40])
    before = truncated.read_bytes()
    with pytest.raises(ExportedFileError, match=f"model.file {truncated} is not a readable ONNX model"):
        family.load_network(str(truncated), None, 0)
    assert truncated.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "truncated.onnx", "whole.onnx"]


def test_a_classifier_and_a_two_input_graph_no_layout_reads_are_refused(tmp_path):
    classifier = onnx_file(tmp_path, "classify", {"output0": [1, 1000]})
    with pytest.raises(ExportedFileError, match="one score per class per image, a classification model's"):
        family.load_network(str(classifier), None, 0)
    two = onnx_file(tmp_path, "two", {"output0": [1, 7, 100]}, inputs={"images": DYNAMIC, "sizes": [1, 2]})
    with pytest.raises(ExportedFileError, match=r"inputs images .*, sizes \[1, 2\] and outputs .* match no layout"):
        family.load_network(str(two), None, 0)


# --- the facts it answers ----------------------------------------------------------------------------------------

def test_it_answers_its_facts(tmp_path):
    dynamic = onnx_file(tmp_path, "dynamic", {"output0": [1, 7, 100]})
    static = onnx_file(tmp_path, "static", {"output0": [1, 7, 100]}, inputs={"images": [1, 3, 320, 320]})
    detr = onnx_file(tmp_path, "detr", {"boxes": [1, 100, 4], "logits": [1, 100, 3]})
    assert family.NAME == "exported" and family.accepts(str(dynamic)) and family.accepts("x.xml")
    assert not family.accepts("yolov7-tiny")
    assert family.reference_backend(str(dynamic)) == "onnxruntime" and family.reference_backend("m.xml") == "openvino"
    assert family.reference_backend("m.tflite") == "litert"  # the runtime whose own format it is
    assert family.memory_probe(family.load_network(str(dynamic), None, 0), postprocess()) is None
    assert family.defaults(str(dynamic)).preprocess == {
        "img_size": 640, "mean": [0.0] * 3, "std": [1.0] * 3, "resize": "letterbox", "resampler": "opencv",
        "interpolation": "linear", "channels": "rgb", "scale": 255.0, "pad_value": 114, "input_type": "float32",
        "inset": 0}
    assert family.defaults(str(static)).preprocess["img_size"] == 320
    assert family.defaults(str(detr)).preprocess["mean"] == [0.485, 0.456, 0.406]
    assert family.defaults(str(detr)).preprocess["resize"] == "stretch"
    assert family.defaults(str(dynamic)).evaluation.conf_thres == 0.001  # NMS follows: Ultralytics' val
    assert family.defaults(str(detr)).evaluation.conf_thres == 0.0  # the file's own cut
    torch_runtime = SimpleNamespace(backend="torch", precision="fp32")
    assert ("runtime.backend torch cannot run dynamic.onnx (model.file): the file is the network"
            in family.unsupported_runtime(torch_runtime, str(dynamic)))
    ir_on_ort = SimpleNamespace(backend="onnxruntime", precision="fp32")
    assert "an OpenVINO IR is read by runtime.backend openvino" in family.unsupported_runtime(ir_on_ort, "m.xml")
    assert family.unsupported_runtime(ir_on_ort, str(dynamic)) is None
    assert "model.file static.onnx is a static export whose input is 320x320" in family.settings_problem(
        str(static), SimpleNamespace(img_size=640), 1)
    assert family.settings_problem(str(dynamic), SimpleNamespace(img_size=640), 1) is None
    assert family.smallest_input(str(dynamic)) == 32 and family.largest_input_area(str(dynamic), preprocess(64)) == 4096
    tall = onnx_file(tmp_path, "tall", {"output0": [1, 7, 100]}, inputs={"images": [1, 3, 800, 608]})
    assert family.largest_input_area(str(tall), preprocess(800)) == 800 * 608  # its own sides, not img_size squared
    assert torch.equal(family.example_input(preprocess(32)), torch.zeros(1, 3, 32, 32))


# --- the pipeline it builds --------------------------------------------------------------------------------------

def test_a_yolo_layout_is_letterboxed_and_its_boxes_scaled_back(tmp_path):
    path = onnx_file(tmp_path, "v8", {"output0": [1, 7, 100]})
    network = family.load_network(str(path), None, 0)
    raw = torch.zeros(1, 7, 100)
    raw[0, :4, 0] = torch.tensor([32.0, 32.0, 16.0, 16.0])  # centre 32, 32, 16 x 16 in the 64-pixel input
    raw[0, 4 + 1, 0] = 0.9
    pipeline = family.build_pipeline(network, fixed(raw), preprocess(64), postprocess(), evaluation=True)
    assert isinstance(pipeline.preprocessor, Prepare) and isinstance(pipeline.restorer, Restore)
    assert pipeline.preprocessor.recipe.resize == "letterbox" and pipeline.restorer.in_input
    assert pipeline.preprocessor.eight_bit is False and pipeline.preprocessor.recipe.pad_value == 114
    assert pipeline.class_names == ["0", "1", "2"] and pipeline.score_threshold == 0.25
    assert pipeline.decoder.nms.settings.multi_label is False and pipeline.decoder.nms.settings.iou_thres == 0.7
    # A 32 x 64 image fills the square's width, 16 rows of padding above: [24, 24, 40, 40] is [24, 8, 40, 24].
    found = pipeline([np.zeros((32, 64, 3), np.uint8)])[0]
    assert found.boxes.tolist() == [[24.0, 8.0, 40.0, 24.0]] and found.labels.tolist() == [1]
    assert found.scores.tolist() == pytest.approx([0.9])


def test_a_runtime_that_takes_the_pixels_gets_them(tmp_path):
    network = family.load_network(str(onnx_file(tmp_path, "v8", {"output0": [1, 7, 100]})), None, 0)
    pipeline = family.build_pipeline(network, fixed(torch.zeros(1, 7, 100), dtype=torch.uint8), preprocess(64),
                                     postprocess(multi_label=True))
    assert pipeline.preprocessor.eight_bit is True and pipeline.decoder.nms.settings.multi_label is True
    assert pipeline([np.full((64, 64, 3), 7, np.uint8)])[0].boxes.shape == (0, 4)


def test_a_detr_layout_is_stretched_and_its_boxes_mapped_back_axis_by_axis(tmp_path):
    path = onnx_file(tmp_path, "detr", {"boxes": [1, 100, 4], "logits": [1, 100, 3]})
    network = family.load_network(str(path), None, 0)
    boxes, logits = torch.zeros(1, 100, 4), torch.full((1, 100, 3), -9.0)
    boxes[0, 3] = torch.tensor([0.5, 0.5, 0.25, 0.5])  # centre, 16 x 32 of a 64-pixel input: [24, 16, 40, 48]
    logits[0, 3, 2] = 2.0
    pipeline = family.build_pipeline(network, fixed(boxes, logits), preprocess(64, path), postprocess(conf_thres=0.5))
    assert pipeline.preprocessor.recipe.resize == "stretch" and pipeline.preprocessor.recipe.resampler == "torch"
    found = pipeline([np.zeros((64, 128, 3), np.uint8)])[0]  # twice as wide as the input: x doubles
    assert found.boxes.tolist() == [[48.0, 16.0, 80.0, 48.0]] and found.labels.tolist() == [2]
    assert found.scores.tolist() == pytest.approx([1 / (1 + np.exp(-2.0))])


# --- the real Ultralytics exports ----------------------------------------------------------------------------

@needs_ultra
def test_the_real_exports_say_what_they_are():
    static = family.load_network(str(ULTRA / "yolo11n-shapes.onnx"), None, 0)
    assert static.class_names[9] == "traffic light" and len(static.class_names) == 80
    assert static.description["inputs"] == [["images", [1, 3, 320, 320], "float32"]]
    assert static.description["outputs"] == [["output0", [1, 84, 2100], "float32"]]
    assert {"names", "imgsz", "args", "end2end"} <= set(static.description["metadata_keys"])
    nms = family.load_network(str(ULTRA / "yolo11n-shapes-nms.onnx"), None, 0)
    assert nms.weights == ("file yolo11n-shapes-nms.onnx (onnx, layout end2end: metadata: NMS in the graph (nms or "
                           "end2end), output (B, K, 6))")
    assert nms.pixel_scale == PIXEL_SCALE and nms.cache_key != static.cache_key
    ir = family.load_network(str(ULTRA / "yolo11n-shapes_openvino_model" / "yolo11n-shapes.xml"), None, 0)
    assert ir.description["format"] == "openvino" and ir.description["inputs"] == [["x.1", [1, 3, 320, 320], "float32"]]
    assert ir.cache_key.count("-") == 1  # the .xml's digest and the .bin's
    assert ir.class_names == static.class_names


@needs_ultra
def test_a_real_checkpoint_is_refused_unread():
    with pytest.raises(ExportedFileError, match="yolo export model=yolo11n-shapes.pt format=onnx"):
        family.load_network(str(ULTRA / "yolo11n-shapes.pt"), None, 0)


def test_the_file_is_read_once_per_process(tmp_path):
    path = onnx_file(tmp_path, "once", {"output0": [1, 7, 100]})
    first = family.load_network(str(path), None, 0)
    path.write_bytes(b"changed after it was read")
    again = family.load_network(str(path), None, 0)  # what was read stands: no second read, no refusal
    assert again.cache_key == first.cache_key and again.class_names == first.class_names
