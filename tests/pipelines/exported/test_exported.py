"""A detector given as a file (model.file): each output layout decoded against hand-computed boxes on small
exports made here from torch modules, what a file says about itself, the files refused, and the real YOLO11n
Ultralytics exported (shared/data/ultra) against Ultralytics' own predictions."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
import torch
from torch import nn

from benchmark import main
from pipelines.exported import facts
from pipelines.exported.inspection import ExportedFileError, read_exported
from pipelines.exported.layouts import read_layout
from utils.config.schema import ConfigError, load_config
from utils.commands.tune.driver import base_config
from tests.support.helpers import section_shape_errors
from tests.support.paths import ROOT
from utils.record.sections import RecipeEntry

ULTRA = ROOT.parent / "shared" / "data" / "ultra"
needs_ultra = pytest.mark.skipif(not ULTRA.is_dir(), reason=f"{ULTRA} (the shared exported files) is not here")
SIDE = 64
CLASSES = 3


class Constant(nn.Module):
    """Outputs fixed tensors whatever the image (plus 0 x the image, so the graph reads its input)."""

    def __init__(self, *outputs: torch.Tensor):
        super().__init__()
        self.outputs = [nn.Parameter(value, requires_grad=False) for value in outputs]
        for index, value in enumerate(self.outputs):
            self.register_parameter(f"out{index}", value)

    def forward(self, images: torch.Tensor):
        touch = images.mean() * 0
        values = tuple(value.expand(images.shape[0], *value.shape[1:]) + touch for value in self.outputs)
        return values[0] if len(values) == 1 else values


def export(tmp_path: Path, name: str, *outputs: torch.Tensor, metadata: dict | None = None, dynamic=True,
           channels: int = 3) -> Path:
    path = tmp_path / f"{name}.onnx"
    names = [f"output{i}" for i in range(len(outputs))]
    axes = {"images": {0: "batch", 2: "height", 3: "width"}, **{n: {0: "batch"} for n in names}} if dynamic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Constant(*outputs), (torch.zeros(1, channels, SIDE, SIDE),), str(path), dynamo=False,
                          opset_version=17, input_names=["images"], output_names=names, dynamic_axes=axes)
    model = onnx.load(str(path))
    for output, value in zip(model.graph.output, outputs):  # the exporter leaves expand's sizes symbolic
        for dim, size in list(zip(output.type.tensor_type.shape.dim, value.shape))[1:]:
            dim.Clear()
            dim.dim_value = size
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=key, value=str(value))
    onnx.save(model, str(path))
    return path


def square_image(tmp_path: Path) -> Path:
    folder = tmp_path / "images"
    folder.mkdir(exist_ok=True)
    if not (folder / "square.png").exists():
        cv2.imwrite(str(folder / "square.png"), np.full((SIDE, SIDE, 3), 90, np.uint8))
    return folder


def run(tmp_path: Path, file: Path, *overrides: str) -> dict:
    images = square_image(tmp_path)
    args = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", f"model.file={file}",
            "--set", "preprocess.img_size=null", "--set", f"dataset.path={images}",
            "--set", "dataset.batch_size=1", "--set", "runtime.backend=onnxruntime", "--set", "benchmark.repeats=1",
            "--set", f"run.output_dir={tmp_path / 'out'}", "--set", f"run.id={file.stem}",
            "--set", "outputs.plots=false", "--set", "outputs.save_images=false"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 0
    run_id = next((o.split("=", 1)[1] for o in reversed(overrides) if o.startswith("run.id=")), file.stem)
    return json.loads((tmp_path / "out" / run_id / "summary.json").read_text())


def detections(tmp_path: Path, file: Path, *overrides: str) -> list[list[float]]:
    run(tmp_path, file, *overrides)
    lines = (tmp_path / "out" / file.stem / "detections.csv").read_text().splitlines()[1:]
    rows = [line.split(",") for line in lines]  # image, class_id, class_name, score, x1, y1, x2, y2
    return [[float(v) for v in row[4:8]] + [float(row[3]), float(row[1])] for row in rows]


# Each layout through the whole run, on ONNX Runtime ----------------------------------------------------------

@pytest.mark.slow
def test_yolov8_channels_first_output_through_nms(tmp_path):
    # Two candidates on one object (class 1): NMS keeps the 0.9 one; a third of class 2 stays beside it.
    raw = torch.zeros(1, 4 + CLASSES, 100)  # channels before anchors
    raw[0, :4, :3] = torch.tensor([[32.0, 33.0, 20.0], [32.0, 32.0, 20.0], [16.0, 16.0, 8.0], [16.0, 16.0, 8.0]])
    raw[0, 4 + 1, 0], raw[0, 4 + 1, 1], raw[0, 4 + 2, 2] = 0.9, 0.8, 0.6
    found = detections(tmp_path, export(tmp_path, "v8", raw), f"preprocess.img_size={SIDE}")
    assert found == [pytest.approx([24.0, 24.0, 40.0, 40.0, 0.9, 1]), pytest.approx([16.0, 16.0, 24.0, 24.0, 0.6, 2])]


@pytest.mark.slow
def test_yolov5_output_scores_objectness_times_class(tmp_path):
    raw = torch.zeros(1, 2000, 5 + CLASSES)  # thousands of rows: anchors, read without metadata
    raw[0, 0] = torch.tensor([32.0, 32.0, 16.0, 16.0, 0.8, 0.0, 0.0, 0.5])
    found = detections(tmp_path, export(tmp_path, "v5", raw), f"preprocess.img_size={SIDE}",
                       "postprocess.conf_thres=0.3")
    assert found == [pytest.approx([24.0, 24.0, 40.0, 40.0, 0.4, 2])]


@pytest.mark.slow
def test_end_to_end_rows_take_the_score_cut_only(tmp_path):
    raw = torch.zeros(1, 5, 6)
    raw[0, 0] = torch.tensor([1.0, 2.0, 30.0, 40.0, 0.8, 1.0])
    raw[0, 1] = torch.tensor([2.0, 3.0, 31.0, 41.0, 0.7, 1.0])  # overlapping: no NMS follows, both stay
    raw[0, 2] = torch.tensor([5.0, 5.0, 9.0, 9.0, 0.2, 0.0])  # under the cut
    file = export(tmp_path, "e2e", raw, metadata={"end2end": True, "names": {0: "a", 1: "b", 2: "c"}})
    found = detections(tmp_path, file, f"preprocess.img_size={SIDE}")
    summary = json.loads((tmp_path / "out" / file.stem / "summary.json").read_text())
    assert [row[4] for row in found] == pytest.approx([0.8, 0.7]) and found[0][:4] == pytest.approx([1, 2, 30, 40])
    assert "end2end" in summary["weights"]


@pytest.mark.slow
def test_rtdetr_queries_are_stretched_back_to_the_image(tmp_path):
    raw = torch.zeros(1, 300, 4 + CLASSES)
    raw[0, 0] = torch.tensor([0.5, 0.5, 0.25, 0.5, 0.1, 0.95, 0.3])
    raw[0, 1] = torch.tensor([0.05, 0.5, 0.3, 0.5, 0.9, 0.1, 0.1])  # reaching past the input's left edge
    file = export(tmp_path, "rtdetr", raw, metadata={"names": {0: "a", 1: "b", 2: "c"}})
    images = square_image(tmp_path)
    cv2.imwrite(str(images / "square.png"), np.full((SIDE, 2 * SIDE, 3), 90, np.uint8))  # stretched, not boxed
    found = detections(tmp_path, file, f"preprocess.img_size={SIDE}")
    # Ultralytics' predict leaves the second box as it falls: from (0.05 - 0.15) x 128 = -12.8.
    assert found == [pytest.approx([48.0, 16.0, 80.0, 48.0, 0.95, 1]), pytest.approx([-12.8, 16.0, 25.6, 48.0, 0.9, 0])]


@pytest.mark.slow
def test_detr_boxes_and_logits_from_two_outputs(tmp_path):
    boxes, logits = torch.zeros(1, 100, 4), torch.full((1, 100, CLASSES), -9.0)
    boxes[0, 3] = torch.tensor([0.25, 0.25, 0.5, 0.5])
    logits[0, 3, 0] = 2.0
    found = detections(tmp_path, export(tmp_path, "detr", boxes, logits), f"preprocess.img_size={SIDE}")
    assert found == [pytest.approx([0.0, 0.0, 32.0, 32.0, 1 / (1 + np.exp(-2.0)), 0], abs=1e-4)]  # csv: 4 decimals


def test_an_ambiguous_output_asks_for_model_head_and_takes_it(tmp_path):
    file = export(tmp_path, "open", torch.zeros(1, 300, 8))
    with pytest.raises(ExportedFileError, match="could be more than one layout") as refusal:
        read_layout(read_exported(file))
    assert "`rtdetr`: output (B, Q, 4 + C) assumed" in str(refusal.value) and "`yolov5`" in str(refusal.value)
    assert "set model.head" in str(refusal.value)
    assert read_layout(read_exported(file), "rtdetr").layout == "rtdetr"
    config = load_config(ROOT / "configs" / "samples_tiny.yaml", [
        f"model.file={file}", "model.head=yolov5", "preprocess.img_size=null", "runtime.backend=onnxruntime"])
    assert config.model.network == str(file) and config.model.head == "yolov5"


# Files refused ------------------------------------------------------------------------------------------------

def refused(tmp_path: Path, capsys, *overrides: str) -> str:
    args = ["--config", str(ROOT / "configs" / "samples_tiny.yaml"), "--set", "preprocess.img_size=null",
            "--set", f"run.output_dir={tmp_path / 'out'}", "--set", "run.id=refused"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 2
    assert not (tmp_path / "out" / "refused").exists()
    error = capsys.readouterr().err
    assert error.startswith("error: ") and "Traceback" not in error
    return error


@pytest.mark.slow
def test_what_is_not_a_detector_is_named(tmp_path, capsys):
    classifier = export(tmp_path, "classify", torch.zeros(1, 1000))
    assert "classification model" in refused(tmp_path, capsys, f"model.file={classifier}")
    masks = export(tmp_path, "seg", torch.zeros(1, 38, 100), torch.zeros(1, 32, 16, 16))
    assert "segmentation or pose export" in refused(tmp_path, capsys, f"model.file={masks}")
    pose = export(tmp_path, "pose", torch.zeros(1, 56, 100), metadata={"task": "pose"})
    assert "a pose export (its metadata says task: pose)" in refused(tmp_path, capsys, f"model.file={pose}")
    gray = export(tmp_path, "gray", torch.zeros(1, 7, 100), channels=1)
    assert "not a batch of 3-channel images" in refused(tmp_path, capsys, f"model.file={gray}")


@pytest.mark.slow
def test_broken_files_are_refused_and_left_as_they_are(tmp_path, capsys):
    whole = export(tmp_path, "whole", torch.zeros(1, 7, 100))
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(whole.read_bytes()[:300])
    before = truncated.read_bytes()
    assert "not a readable ONNX model" in refused(tmp_path, capsys, f"model.file={truncated}")
    assert truncated.read_bytes() == before
    external = tmp_path / "external.onnx"
    model = onnx.load(str(whole))
    onnx.save_model(model, str(external), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="external.onnx.data", size_threshold=0)
    (tmp_path / "external.onnx.data").unlink()
    assert "external data file" in refused(tmp_path, capsys, f"model.file={external}")
    pickle = tmp_path / "yolo11n.pt"
    pickle.write_bytes(b"\x80\x04not unpickled")
    message = refused(tmp_path, capsys, f"model.file={pickle}")
    assert "does not unpickle" in message and "yolo export model=yolo11n.pt format=onnx" in message
    names = export(tmp_path, "names", torch.zeros(1, 4 + CLASSES, 100), metadata={"names": {0: "a", 1: "b"}})
    message = refused(tmp_path, capsys, f"model.file={names}")
    assert "match no layout detbench knows" in message and "its metadata names 2 classes" in message
    dfine = tmp_path / "two_inputs.onnx"
    graph = onnx.load(str(whole))
    graph.graph.input.append(onnx.helper.make_tensor_value_info("orig_target_sizes", onnx.TensorProto.INT64, [1, 2]))
    onnx.save(graph, str(dfine))
    message = refused(tmp_path, capsys, f"model.file={dfine}")
    assert "orig_target_sizes [1, 2] and outputs" in message and "adding-a-layout" in message


@pytest.mark.slow
@pytest.mark.slow
@needs_ultra
def test_an_ir_whose_weights_are_missing_or_short_is_refused(tmp_path, capsys):
    source = ULTRA / "yolo11n-shapes_openvino_model"
    xml = tmp_path / "model.xml"
    xml.write_bytes((source / "yolo11n-shapes.xml").read_bytes())
    assert "its weights file" in refused(tmp_path, capsys, f"model.file={xml}") and not xml.with_suffix(".bin").exists()
    xml.with_suffix(".bin").write_bytes((source / "yolo11n-shapes.bin").read_bytes()[:1000])
    assert "the .bin is truncated or from another export" in refused(tmp_path, capsys, f"model.file={xml}")


def test_a_static_export_wins_over_the_config_and_says_so(tmp_path, capsys):
    static = export(tmp_path, "static", torch.zeros(1, 4 + CLASSES, 100), dynamic=False)
    message = refused(tmp_path, capsys, f"model.file={static}", "dataset.batch_size=4")
    assert "takes batches of exactly 1, and the file's size wins" in message
    message = refused(tmp_path, capsys, f"model.file={static}", "preprocess.img_size=320")
    assert f"whose input is {SIDE}x{SIDE}, and the file's size wins" in message


@pytest.mark.slow
def test_a_file_refuses_torch_and_model_head_needs_a_file(tmp_path, capsys):
    file = export(tmp_path, "any", torch.zeros(1, 4 + CLASSES, 100))
    assert ("runtime.backend torch cannot run any.onnx (model.file): the file is the network, and an ONNX file is "
            "read by runtime.backend onnxruntime or openvino") in refused(
        tmp_path, capsys, f"model.file={file}", "runtime.backend=torch")
    with pytest.raises(ConfigError, match="model.head belongs to the exported family and does not apply to "
                                          "model.arch yolov7-tiny"):
        load_config(ROOT / "configs" / "samples_tiny.yaml", ["model.head=yolov8"])


def test_a_file_takes_class_agnostic_nms_where_nms_follows_its_graph(tmp_path):
    files = ROOT / "configs" / "files.yaml"
    v8 = export(tmp_path, "v8", torch.zeros(1, 4 + CLASSES, 100))
    assert load_config(files, [f"model.file={v8}"]).postprocess.agnostic is False  # Ultralytics' NMS: per class
    assert load_config(files, [f"model.file={v8}", "postprocess.agnostic=true"]).postprocess.agnostic is True
    detr = export(tmp_path, "detr", torch.zeros(1, 100, 4), torch.zeros(1, 100, CLASSES))
    with pytest.raises(ConfigError, match=r"postprocess.agnostic does not apply to model.file \S*detr.onnx: its "
                                          "layout detr gives one row per object already"):
        load_config(files, [f"model.file={detr}", "postprocess.agnostic=false"])


def test_another_familys_key_points_to_the_files_config_only_where_that_would_help(tmp_path):
    file = export(tmp_path, "v8", torch.zeros(1, 4 + CLASSES, 100))
    with pytest.raises(ConfigError) as said:  # files.yaml itself, and the key from --set: starting over is no fix
        load_config(ROOT / "configs" / "files.yaml", [f"model.file={file}", "postprocess.classes=[1]"])
    assert "postprocess.classes belongs to the yolo family" in str(said.value)
    assert "start from" not in str(said.value) and "postprocess.agnostic" in str(said.value)
    with pytest.raises(ConfigError, match=r"preprocess.rect belongs to the yolo family .* or start from "
                                          r"configs/files.yaml, made for it"):  # the YOLO config brought the key
        load_config(ROOT / "configs" / "samples.yaml", [f"model.file={file}"])


def test_tune_starts_from_a_runtime_that_reads_the_file_unless_the_backend_was_set(tmp_path):
    # samples_tiny.yaml runs torch; tune races the backend, so a file there must not stop it before it starts.
    file = export(tmp_path, "any", torch.zeros(1, 4 + CLASSES, 100))
    config = ROOT / "configs" / "samples_tiny.yaml"
    base, stand_in = base_config(config, [f"model.file={file}"], ("torch", "onnxruntime", "openvino"))
    assert base.runtime.backend == "onnxruntime" and stand_in == ["runtime.backend=onnxruntime"]
    with pytest.raises(ConfigError, match="runtime.backend torch cannot run any.onnx"):
        base_config(config, [f"model.file={file}", "runtime.backend=torch"], ("torch", "onnxruntime"))
    static = export(tmp_path, "static", torch.zeros(1, 4 + CLASSES, 100), dynamic=False)  # samples_tiny: batch 2
    base, stand_in = base_config(config, [f"model.file={static}", "preprocess.img_size=null"], ("torch", "openvino"))
    assert base.dataset.batch_size == 1 and stand_in == ["runtime.backend=openvino", "dataset.batch_size=1"]
    with pytest.raises(ConfigError, match="batches of exactly 1"):
        base_config(config, [f"model.file={static}", "preprocess.img_size=null", "dataset.batch_size=2"],
                    ("torch", "openvino"))


# The real YOLO11n that Ultralytics exported ---------------------------------------------------------------------


@needs_ultra
def test_what_the_real_files_say_is_read_and_the_graph_wins_over_the_metadata():
    dynamic = read_exported(ULTRA / "yolo11n-shapes-dynamic.onnx")
    assert dynamic.metadata["batch"] == 1 and dynamic.metadata["imgsz"] == [320, 320]  # what the metadata claims
    assert facts.static_batch(dynamic) is None and facts.static_size(dynamic) is None  # what the graph takes
    nms = read_exported(ULTRA / "yolo11n-shapes-nms.onnx")
    assert nms.metadata["end2end"] == "False" and nms.metadata_flag("nms") is True
    assert read_layout(nms).layout == "end2end"
    ir = read_exported(ULTRA / "yolo11n-shapes_openvino_model" / "yolo11n-shapes.xml")
    assert ir.format == "openvino" and ir.names()[9] == "traffic light" and read_layout(ir).layout == "yolov8"
    assert facts.defaults(str(ULTRA / "yolo11n-shapes-nms.onnx")).evaluation.multi_label is None


@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.slow
@pytest.mark.slow
@needs_ultra
@pytest.mark.parametrize("name, backend", [("yolo11n-shapes.onnx", "onnxruntime"),
                                           ("yolo11n-shapes-nms.onnx", "openvino"),
                                           ("yolo11n-shapes_openvino_model/yolo11n-shapes.xml", "openvino")])
def test_the_real_files_give_ultralytics_own_predictions(name, backend):
    from benchmarks.peers.ultralytics_exported_files import against_ultralytics

    expected = json.loads((ULTRA / "expected.json").read_text())
    counts = against_ultralytics(ULTRA / name, backend, expected, ULTRA.parent)
    assert counts.reference == 149 and counts.loose_recall >= 0.99 and counts.loose_precision >= 0.99


@needs_ultra
def test_a_dynamic_file_on_openvino_equals_its_onnx_runtime_reference(tmp_path):
    summary = run(tmp_path, ULTRA / "yolo11n-shapes-dynamic.onnx", "runtime.backend=openvino",
                  f"dataset.path={ROOT / 'datasets' / 'samples'}", "preprocess.img_size=320", "dataset.limit=2",
                  "dataset.batch_size=2", "benchmark.layer_timing=false")
    assert summary["family"] == "exported" and summary["agreement"]["verdict"] == "equal"
    assert summary["agreement"]["reference"].startswith("onnxruntime fp32")
    assert summary["accuracy"]["settings"]["protocol"].startswith("Ultralytics' val")
    read = next(note for note in summary["notes"] if note.startswith("the network as read: "))
    assert "layout yolov8" in read and "format onnx" in read and "inputs [['images', ['batch', 3, 'height'" in read


def test_a_file_runs_under_loadgen_and_compares_with_another_run(tmp_path, capsys):
    file = export(tmp_path, "v8loadgen", torch.zeros(1, 4 + CLASSES, 100))
    offline = run(tmp_path, file, f"preprocess.img_size={SIDE}", "benchmark.scenario=offline",
                  "benchmark.loadgen.min_duration_s=0.5", "benchmark.loadgen.min_query_count=1",
                  # Above this constant graph's rate (about 1,400 images/s): a rate guessed from its few warm
                  # images can fall below what it then runs at, ending the test before its minimum duration.
                  "benchmark.loadgen.target_qps=4000",
                  "runtime.backend=openvino", "run.id=offline", "benchmark.layer_timing=false")
    assert offline["scenario"]["result"]["valid"] is True and offline["family"] == "exported"
    run(tmp_path, file, f"preprocess.img_size={SIDE}", "run.id=single", "benchmark.layer_timing=false")
    assert main(["compare", str(tmp_path / "out" / "single"), str(tmp_path / "out" / "offline")]) == 0
    assert "forward" in capsys.readouterr().out


class ConvThenDecode(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.last = nn.Conv2d(3, 4, 3, padding=1), nn.Conv2d(4, 4 + CLASSES, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = self.last(torch.relu(self.first(images))).flatten(2)
        return torch.cat((out[:, :4] * 8.0, out[:, 4:].sigmoid()), dim=1)


def test_int8_of_a_file_keeps_its_decode_after_the_last_convolution_in_float(tmp_path):
    from pipelines.runtimes.quantization import DECODE, file_float_nodes

    path = tmp_path / "decode.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(ConvThenDecode().eval(), (torch.zeros(1, 3, SIDE, SIDE),), str(path), dynamo=False,
                          opset_version=17, input_names=["images"], output_names=["output0"])
    ops = {node.name: node.op_type for node in onnx.load(str(path)).graph.node}
    kept = file_float_nodes(path, [DECODE])
    assert {ops[name] for name in kept} >= {"Sigmoid", "Concat", "Mul"}
    assert "Relu" not in {ops[name] for name in kept} and "Conv" not in {ops[name] for name in kept}
    assert file_float_nodes(path, ["Relu"]) == [name for name, op in ops.items() if op == "Relu"]
    with pytest.raises(ValueError, match="names no node of decode.onnx"):
        file_float_nodes(path, ["/model.77/"])


def test_an_int8_run_of_a_file_quantizes_into_the_cache_never_beside_the_file(tmp_path):
    raw = torch.zeros(1, 4 + CLASSES, 100)
    raw[0, :4, 0], raw[0, 5, 0] = torch.tensor([32.0, 32.0, 16.0, 16.0]), 0.9
    (tmp_path / "files").mkdir()
    file = export(tmp_path / "files", "q", raw)
    before = sorted(p.name for p in file.parent.iterdir())
    calibration = tmp_path / "calibration"
    calibration.mkdir()
    cv2.imwrite(str(calibration / "other.png"), np.full((SIDE, SIDE, 3), 30, np.uint8))
    summary = run(tmp_path, file, f"preprocess.img_size={SIDE}", "runtime.precision=int8",
                  f"runtime.calibration.path={calibration}",
                  f"runtime.cache_dir={tmp_path / 'cache'}", "runtime.calibration.images=1",
                  "benchmark.layer_timing=false")
    assert summary["runtime"]["precision"] == "int8"
    assert sorted(p.name for p in file.parent.iterdir()) == before
    assert any(p.name.startswith("q.int8-") for p in (tmp_path / "cache").iterdir())


def test_a_stretched_image_maps_its_boxes_back_axis_by_axis():
    from pipelines.exported.preparing import Prepare, Restore
    from pipelines.exported.recipe import Recipe

    image = np.zeros((100, 400, 3), np.uint8)
    image[:, :, 2] = 255  # red in BGR
    batch = Prepare(Recipe(resize="stretch", std=(0.5, 1.0, 1.0)), (64, 64))([image])
    assert batch.tensor.shape == (1, 3, 64, 64) and float(batch.tensor[0, 0].mean()) == pytest.approx(2.0)
    restored = Restore()([torch.tensor([[16.0, 16.0, 48.0, 80.0, 0.9, 1.0]])], batch)[0]
    assert restored[0].tolist() == pytest.approx([100.0, 25.0, 300.0, 100.0, 0.9, 1.0])  # clipped at the bottom


def test_decoding_at_another_cut_leaves_the_deployed_decode_as_it_was():
    from pipelines.exported.layouts import layout
    from pipelines.exported.layouts.contract import Reading
    from pipelines.boxes.nms import NmsSettings
    from pipelines.exported.pipeline import Decode

    deployed = Decode(layout("yolov8"), Reading("yolov8", CLASSES, "test"), NmsSettings(0.25, 0.7, max_det=300))
    raw = torch.zeros(1, 4 + CLASSES, 100)
    raw[0, :4, 0], raw[0, 5, 0] = torch.tensor([32.0, 32.0, 16.0, 16.0]), 0.1
    assert len(deployed.at(0.05)(raw, SIDE, SIDE)[0]) == 1
    assert deployed.conf_thres == 0.25 and deployed.nms.settings.conf_thres == 0.25
    assert len(deployed(raw, SIDE, SIDE)[0]) == 0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_a_static_export_of_batch_two_runs_at_its_batch(tmp_path, backend):
    rows = torch.zeros(1, 4 + CLASSES, 100)
    rows[0, :, 0] = torch.tensor([32.0, 32.0, 20.0, 20.0, 0.9, 0.0, 0.0])
    path = tmp_path / "batch2.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Constant(rows), (torch.zeros(2, 3, SIDE, SIDE),), str(path), dynamo=False,
                          opset_version=17, input_names=["images"], output_names=["output0"])
    folder = square_image(tmp_path)
    cv2.imwrite(str(folder / "second.png"), np.full((SIDE, SIDE, 3), 30, np.uint8))
    summary = run(tmp_path, path, "dataset.batch_size=2", f"runtime.backend={backend}")
    assert summary["images_processed"] == 2 and summary["detections"] == 2


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "openvino"])
def test_a_static_non_square_export_is_fed_its_own_height_and_width(tmp_path, capsys, backend):
    # (1, 3, 96, 64): img_size is its longer side, 96; a square of it is what the graph refuses.
    rows = torch.zeros(1, 4 + CLASSES, 100)
    rows[0, :, 0] = torch.tensor([32.0, 48.0, 20.0, 20.0, 0.9, 0.0, 0.0])
    path = tmp_path / "tall.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Constant(rows), (torch.zeros(1, 3, 96, 64),), str(path), dynamo=False,
                          opset_version=17, input_names=["images"], output_names=["output0"])
    folder = tmp_path / "tall"
    folder.mkdir()
    cv2.imwrite(str(folder / "tall.png"), np.full((192, 128, 3), 90, np.uint8))  # twice the input, same aspect
    summary = run(tmp_path, path, f"runtime.backend={backend}", f"dataset.path={folder}",
                  "benchmark.agreement.enabled=false")
    assert summary["img_size"] == 96 and summary["detections"] == 1
    said = capsys.readouterr().out
    assert f"Preparing {backend}..." in said and "export is cached" not in said  # a file is read, never exported
    recipe = summary["recipe"]  # what it ran and why, in summary.json and on the console
    assert section_shape_errors(recipe, RecipeEntry) == [] and recipe["preprocess"]["input_hw"] == [96, 64]
    assert f"  recipe: {recipe['ground']}" in said and f"    {recipe['said']}" in said
    row = (tmp_path / "out" / "tall" / "detections.csv").read_text().splitlines()[1].split(",")
    assert [float(value) for value in row[4:8]] == [44.0, 76.0, 84.0, 116.0]
