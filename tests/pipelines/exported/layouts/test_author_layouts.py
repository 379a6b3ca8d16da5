"""The layouts of YOLO-NAS (super-gradients), PaddleDetection (PP-PicoDet, PP-YOLOE+ through paddle2onnx) and
NanoDet-Plus: each read from a small export made here from a torch module with hand-placed outputs (their
authors' input and output names and shapes), decoded, and mapped back to the original image by the layout's own
recipe, against hand-computed boxes. No author's package is imported: the formats' facts are the authors', the
exports are ours."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest
import torch
from torch import nn

from pipelines.exported.decoding import cut_rows
from pipelines.exported.facts import read
from pipelines.exported.inspection import ExportedFileError, read_exported
from pipelines.exported.layouts import layout
from pipelines.exported.paddle_sidecar import read_infer_config
from pipelines.exported.preparing import Prepare, placement
from pipelines.exported.recipe import Recipe
from tests.pipelines.exported.test_exported import run

SIDE = 64
FAR = -30.0  # a bin's logit that its softmax leaves out


class Outputs(nn.Module):
    """Returns fixed tensors whatever its inputs (plus 0 x each floating input, so the graph reads them), expanded
    over the image batch where they have one; `scaled` outputs are divided by each image's scale_factor (y, x),
    as PaddleDetection's graphs map boxes back to the original image."""

    def __init__(self, *outputs: torch.Tensor, batched: bool = True, scaled: tuple[int, ...] = ()):
        super().__init__()
        self.values = list(outputs)
        self.batched, self.scaled = batched, scaled

    def forward(self, images: torch.Tensor, *extra: torch.Tensor):
        touch = images.float().mean() * 0 + sum((e.float().mean() * 0 for e in extra), torch.zeros(()))
        results = []
        for index, value in enumerate(self.values):
            if self.batched:
                value = value.expand(images.shape[0], *value.shape[1:])
            if index in self.scaled:
                scale_y, scale_x = extra[0][:, 0], extra[0][:, 1]
                value = value / torch.stack((scale_x, scale_y, scale_x, scale_y), dim=-1)[:, None, :]
            results.append(value + touch.to(value.dtype) if value.is_floating_point() else value)
        return tuple(results) if len(results) > 1 else results[0]


def export(tmp_path: Path, name: str, module: nn.Module, inputs: dict[str, torch.Tensor], outputs: list[str],
           dynamic: dict | None = None) -> Path:
    path = tmp_path / f"{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, tuple(inputs.values()), str(path), dynamo=False, opset_version=17,
                          input_names=list(inputs), output_names=outputs, dynamic_axes=dynamic)
    values = module(*inputs.values())
    model = onnx.load(str(path))
    for output, value in zip(model.graph.output, values if isinstance(values, tuple) else (values,)):
        for dim, size in list(zip(output.type.tensor_type.shape.dim, value.shape))[1:]:  # the exporter's symbols
            dim.Clear()
            dim.dim_value = size
    onnx.save(model, str(path))
    return path


def images(tmp_path: Path, *shapes: tuple[int, int]) -> Path:
    folder = tmp_path / "photos"  # tests.pipelines.exported.test_exported.run adds a square image to "images"
    folder.mkdir(exist_ok=True)
    for index, (height, width) in enumerate(shapes):
        cv2.imwrite(str(folder / f"image{index}.png"), np.full((height, width, 3), 90, np.uint8))
    return folder


def detections(tmp_path: Path, file: Path, *overrides: str) -> dict[str, list[list[float]]]:
    """Per image name, the run's detections as x1, y1, x2, y2, score, class."""
    run_id = f"{file.stem}-{len(list((tmp_path / 'out').glob('*'))) if (tmp_path / 'out').exists() else 0}"
    run(tmp_path, file, f"dataset.path={tmp_path / 'photos'}", f"run.id={run_id}", *overrides)
    found: dict[str, list[list[float]]] = {}
    for line in (tmp_path / "out" / run_id / "detections.csv").read_text().splitlines()[1:]:
        image, class_id, _, score, *box = line.split(",")  # image, class_id, class_name, score, x1, y1, x2, y2
        found.setdefault(Path(image).stem, []).append([float(v) for v in box[:4]] + [float(score), float(class_id)])
    return found


def decoded(file: Path, height: int = SIDE, width: int = SIDE, conf: float = 0.25, **inputs: np.ndarray):
    """The file run on ONNX Runtime and decoded by its layout: per image, rows above `conf` (before any NMS)."""
    import onnxruntime as ort

    _, module, reading = read(str(file))
    session = ort.InferenceSession(str(file), providers=["CPUExecutionProvider"])
    outputs = tuple(torch.from_numpy(value) for value in session.run(None, inputs))
    raw = module.raw(outputs, reading, height, width)
    if module.NMS:  # (B, N, 5 + C) centres -> corner rows of each best class
        centre, size = raw[..., :2], raw[..., 2:4]
        score, label = (raw[..., 5:] * raw[..., 4:5]).max(dim=-1)
        raw = torch.cat((centre - size / 2, centre + size / 2, score[..., None], label[..., None].float()), dim=-1)
    return [cut_rows(image, conf, 100).tolist() for image in raw]


def one_hot_bins(*bins: float, count: int = 8) -> torch.Tensor:
    """Left, top, right, bottom distributions whose expectation is each given bin (a half: two bins alike)."""
    logits = torch.full((4, count), FAR)
    for side, value in enumerate(bins):
        low = math.floor(value)
        logits[side, low] = 0.0
        if value != low:
            logits[side, low + 1] = 0.0
    return logits.reshape(-1)


# YOLO-NAS (super-gradients) -------------------------------------------------------------------------------------

# SHIFT: a 32 x 64 image in a 64 x 64 input at super-gradients' inset of 2: fitted into 60 x 60 (ratio 15/16, 60 x 30),
# centred (15 grey rows above) and moved 2 inside: a box maps back as ((x - 2) 16/15, (y - 17) 16/15), so
# [17, 17, 47, 47] is [16, 0, 48, 32] and [2, 24.5, 9.5, 39.5] is [0, 8, 8, 24].

def test_super_gradients_letterbox_fits_the_image_inside_an_inset():
    placed = placement(32, 64, (SIDE, SIDE), "letterbox", inset=2)
    assert (placed.size, placed.scale_x, placed.left, placed.top) == ((60, 30), 0.9375, 2, 17)
    assert placement(32, 64, (SIDE, SIDE), "letterbox") == placement(32, 64, (SIDE, SIDE), "letterbox", inset=0)
    image = np.full((32, 64, 3), 200, np.uint8)
    tensor = Prepare(layout("yolonas").RECIPE, (SIDE, SIDE))([image]).tensor[0, 0] * 255
    assert tensor[17, 1].item() == pytest.approx(114) and tensor[17, 2].item() == pytest.approx(200)
    assert tensor[16, 30].item() == pytest.approx(114) and tensor[46, 61].item() == pytest.approx(200)
    assert tensor[47, 30].item() == pytest.approx(114) and tensor[30, 62].item() == pytest.approx(114)


def yolonas_candidates(rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    boxes, scores = torch.zeros(1, rows, 4), torch.zeros(1, rows, 3)
    boxes[0, 0], scores[0, 0, 1] = torch.tensor([17.0, 17.0, 47.0, 47.0]), 0.9
    boxes[0, 1], scores[0, 1, 1] = torch.tensor([19.0, 17.0, 49.0, 47.0]), 0.8  # IoU 0.88 with the first: suppressed
    boxes[0, 2], scores[0, 2, 2] = torch.tensor([2.0, 24.5, 9.5, 39.5]), 0.6
    scores[0, 0, 0] = 0.5  # the first box under a second class: kept too (NMS class by class)
    return boxes, scores


@pytest.mark.slow
def test_yolonas_corners_and_scores_go_through_nms_and_the_centred_letterbox(tmp_path):
    file = export(tmp_path, "yolonas", Outputs(*yolonas_candidates(1000)), {"images": torch.zeros(1, 3, SIDE, SIDE)},
                  ["pre_nms_bboxes_xyxy", "pre_nms_scores"])
    _, module, reading = read(str(file))
    assert reading.layout == "yolonas" and reading.classes == 3 and not reading.assumed
    assert module.RECIPE.resize == "letterbox" and module.DEPLOYED == {"conf_thres": 0.25, "iou_thres": 0.7}
    images(tmp_path, (32, 64))  # see SHIFT above
    found = detections(tmp_path, file)
    assert found == {"image0": [pytest.approx([16.0, 0.0, 48.0, 32.0, 0.9, 1]),
                                pytest.approx([0.0, 8.0, 8.0, 24.0, 0.6, 2]),
                                pytest.approx([16.0, 0.0, 48.0, 32.0, 0.5, 0])]}


def test_yolonas_rows_without_its_names_are_its_grid_cells_and_assumed(tmp_path):
    side = 256  # 1344 rows: more than a DETR's queries
    boxes, scores = yolonas_candidates(1344)
    file = export(tmp_path, "plain", Outputs(boxes, scores), {"images": torch.zeros(1, 3, side, side)},
                  ["boxes", "scores"])
    _, _, reading = read(str(file))
    assert reading.layout == "yolonas" and reading.assumed
    found = decoded(file, side, side, images=np.zeros((1, 3, side, side), np.float32))
    assert found[0][0] == pytest.approx([17.0, 17.0, 47.0, 47.0, 0.9, 1])
    odd = export(tmp_path, "odd", Outputs(*yolonas_candidates(1343)), {"images": torch.zeros(1, 3, side, side)},
                 ["boxes", "scores"])
    assert "cells of strides" in layout("yolonas").read(read_exported(odd)).reason


def test_yolonas_flat_rows_are_split_by_their_image_index(tmp_path):
    flat = torch.tensor([[0.0, 16.0, 16.0, 48.0, 48.0, 0.9, 1.0],
                         [1.0, 16.0, 24.0, 40.0, 40.0, 0.6, 2.0],
                         [1.0, 16.0, 24.0, 40.0, 40.0, 0.1, 0.0]])  # under the cut
    file = export(tmp_path, "flat2", Outputs(flat, batched=False),
                  {"images": torch.zeros(2, 3, SIDE, SIDE, dtype=torch.uint8)}, ["flat_predictions"])
    _, _, reading = read(str(file))
    assert reading.layout == "yolonas_flat" and reading.details == {"batch": 2} and not reading.assumed
    found = decoded(file, images=np.zeros((2, 3, SIDE, SIDE), np.uint8))
    assert found == [[pytest.approx([16.0, 16.0, 48.0, 48.0, 0.9, 1])],
                     [pytest.approx([16.0, 24.0, 40.0, 40.0, 0.6, 2])]]
    empty = export(tmp_path, "flat3", Outputs(flat[:1], batched=False),
                   {"images": torch.zeros(3, 3, SIDE, SIDE, dtype=torch.uint8)}, ["flat_predictions"])
    assert [len(rows) for rows in decoded(empty, images=np.zeros((3, 3, SIDE, SIDE), np.uint8))] == [1, 0, 0]


@pytest.mark.slow
def test_yolonas_flat_file_takes_uint8_pixels_on_both_runtimes(tmp_path):
    flat = torch.tensor([[0.0, 17.0, 17.0, 47.0, 47.0, 0.9, 1.0], [0.0, 2.0, 24.5, 9.5, 39.5, 0.6, 2.0]])
    file = export(tmp_path, "flat", Outputs(flat, batched=False),
                  {"images": torch.zeros(1, 3, SIDE, SIDE, dtype=torch.uint8)}, ["graph2_flat_predictions"])
    assert not read(str(file))[2].assumed
    images(tmp_path, (32, 64))
    for backend in ("onnxruntime", "openvino"):
        found = detections(tmp_path, file, f"runtime.backend={backend}")
        assert found == {"image0": [pytest.approx([16.0, 0.0, 48.0, 32.0, 0.9, 1]),
                                    pytest.approx([0.0, 8.0, 8.0, 24.0, 0.6, 2])]}, backend


def test_a_flat_file_without_a_fixed_batch_is_not_read_as_flat(tmp_path):
    file = export(tmp_path, "dyn", Outputs(torch.zeros(3, 7), batched=False),
                  {"images": torch.zeros(1, 3, SIDE, SIDE, dtype=torch.uint8)}, ["flat_predictions"],
                  dynamic={"images": {0: "batch"}})
    assert "fixed batch" in layout("yolonas_flat").read(read_exported(file)).reason


@pytest.mark.slow
def test_yolonas_batch_format_keeps_each_images_counted_rows(tmp_path):
    boxes, scores, classes = torch.zeros(1, 5, 4), torch.zeros(1, 5), torch.zeros(1, 5, dtype=torch.int64)
    boxes[0, 0], scores[0, 0], classes[0, 0] = torch.tensor([17.0, 17.0, 47.0, 47.0]), 0.9, 1
    boxes[0, 1], scores[0, 1], classes[0, 1] = torch.tensor([2.0, 24.5, 9.5, 39.5]), 0.6, 2
    boxes[0, 2], scores[0, 2] = torch.tensor([0.0, 0.0, 64.0, 64.0]), 0.99  # past the count: padding
    module = Outputs(torch.tensor([[2]]), boxes, scores, classes)
    file = export(tmp_path, "batch", module, {"images": torch.zeros(1, 3, SIDE, SIDE, dtype=torch.uint8)},
                  ["graph2_num_predictions", "graph2_pred_boxes", "graph2_pred_scores", "graph2_pred_classes"])
    _, _, reading = read(str(file))  # super-gradients prefixes its outputs' names with its graph's
    assert reading.layout == "yolonas_batch" and not reading.assumed
    images(tmp_path, (32, 64))
    for backend in ("onnxruntime", "openvino"):
        found = detections(tmp_path, file, f"runtime.backend={backend}")
        assert found == {"image0": [pytest.approx([16.0, 0.0, 48.0, 32.0, 0.9, 1]),
                                    pytest.approx([0.0, 8.0, 8.0, 24.0, 0.6, 2])]}, backend


# PaddleDetection through paddle2onnx ------------------------------------------------------------------------------

INFER_CFG = """mode: paddle
draw_threshold: 0.5
metric: COCO
use_dynamic_shape: false
arch: {arch}
min_subgraph_size: 3
Preprocess:
- interp: 2
  keep_ratio: false
  target_size: [64, 64]
  type: Resize
- is_scale: true
  mean: [0.485, 0.456, 0.406]
  std: [0.229, 0.224, 0.225]
  type: NormalizeImage
- type: Permute
label_list: [a, b, c]
{extra}"""


def paddle_inputs() -> dict[str, torch.Tensor]:
    return {"image": torch.zeros(1, 3, SIDE, SIDE), "scale_factor": torch.ones(1, 2)}


PADDLE_AXES = {"image": {0: "batch"}, "scale_factor": {0: "batch"}}


class MulticlassNms(nn.Module):
    """multiclass_nms3's outputs: rows of class, score, x1, y1, x2, y2 divided by the scale factor, and a count."""

    def forward(self, image: torch.Tensor, scale_factor: torch.Tensor):
        scale_y, scale_x = scale_factor[0, 0], scale_factor[0, 1]
        box = torch.stack((16.0 / scale_x, 16.0 / scale_y, 48.0 / scale_x, 48.0 / scale_y)) + image.mean() * 0
        rows = torch.stack((torch.cat((torch.tensor([1.0, 0.8]), box)),
                            torch.tensor([-1.0, 0.9, 0.0, 0.0, 0.0, 0.0])))  # Paddle's row for "none": class -1
        return rows, torch.tensor([2], dtype=torch.int32)


@pytest.mark.slow
def test_paddle_multiclass_nms_rows_are_in_original_pixels_from_the_scale_factor(tmp_path):
    file = export(tmp_path, "ppnms", MulticlassNms(), paddle_inputs(),
                  ["multiclass_nms3_0.tmp_0", "multiclass_nms3_0.tmp_2"], PADDLE_AXES)
    _, module, reading = read(str(file))
    assert reading.layout == "paddle_nms" and dict(reading.extra_inputs) == {"scale_factor": "scale_yx"}
    assert "assumed" in reading.why and reading.recipe is None and module.RECIPE.interpolation == "cubic"
    images(tmp_path, (32, 128))  # stretched: scale y 2, x 0.5
    for backend in ("onnxruntime", "openvino"):
        found = detections(tmp_path, file, f"runtime.backend={backend}")
        assert found == {"image0": [pytest.approx([32.0, 8.0, 96.0, 24.0, 0.8, 1])]}, backend


def test_infer_cfg_beside_the_file_sets_the_recipe_and_the_classes(tmp_path):
    file = export(tmp_path, "ppnms", MulticlassNms(), paddle_inputs(),
                  ["multiclass_nms3_0.tmp_0", "multiclass_nms3_0.tmp_2"], PADDLE_AXES)
    (tmp_path / "infer_cfg.yml").write_text(INFER_CFG.format(arch="YOLO", extra="").replace(
        "- type: Permute", "- type: Permute\n- type: Unheard"))
    _, _, reading = read_fresh(file)
    assert reading.classes == 3 and "infer_cfg.yml" in reading.why and "not applied: Unheard" in reading.why
    recipe = reading.recipe
    assert (recipe.resize, recipe.interpolation, recipe.channels, recipe.scale) == ("stretch", "cubic", "rgb", 255.0)
    assert recipe.mean == (0.485, 0.456, 0.406) and recipe.std == (0.229, 0.224, 0.225)
    kept = read_infer_config(read_exported(file), Recipe())
    assert kept.recipe == recipe
    (tmp_path / "infer_cfg.yml").write_text(INFER_CFG.format(arch="YOLO", extra="").replace(
        "keep_ratio: false", "keep_ratio: true").replace("interp: 2", "interp: 1"))
    boxed = read_infer_config(read_exported(file), Recipe()).recipe
    assert (boxed.resize, boxed.interpolation) == ("letterbox_corner", "linear")
    (tmp_path / "infer_cfg.yml").write_text("Preprocess: 3\n")
    with pytest.raises(ExportedFileError, match="infer_cfg.yml"):
        read_infer_config(read_exported(file), Recipe())


def read_fresh(file: Path):
    """facts.read caches a file's reading per process: a sidecar written after a first read needs a fresh one."""
    from pipelines.exported import layouts

    exported = read_exported(file)
    reading = layouts.read_layout(exported)
    return exported, layouts.layout(reading.layout), reading


@pytest.mark.slow
def test_ppyoloe_boxes_in_original_pixels_and_channels_first_scores_go_through_nms(tmp_path):
    boxes, scores = torch.zeros(1, 84, 4), torch.zeros(1, 3, 84)
    boxes[0, 0], scores[0, 1, 0] = torch.tensor([16.0, 16.0, 48.0, 48.0]), 0.9
    boxes[0, 1], scores[0, 1, 1] = torch.tensor([18.0, 16.0, 50.0, 48.0]), 0.8  # suppressed (IoU 0.88)
    boxes[0, 2], scores[0, 0, 2] = torch.tensor([0.0, 0.0, 8.0, 8.0]), 0.7
    file = export(tmp_path, "ppyoloe", Outputs(boxes, scores, scaled=(0,)), paddle_inputs(),
                  ["tmp_boxes", "tmp_scores"], PADDLE_AXES)
    _, module, reading = read(str(file))
    assert reading.layout == "ppyoloe" and reading.classes == 3 and module.BOXES == "original"
    images(tmp_path, (32, 128))  # scale y 2, x 0.5: the graph divides, detbench only clips
    found = detections(tmp_path, file)
    assert found == {"image0": [pytest.approx([32.0, 8.0, 96.0, 24.0, 0.9, 1]),
                                pytest.approx([0.0, 0.0, 16.0, 4.0, 0.7, 0])]}


def picodet_outputs() -> list[torch.Tensor]:
    """Strides 8, 16, 32, 64 at 64 x 64: 64, 16, 4 and 1 rows, 3 classes, reg_max 7."""
    rows = (64, 16, 4, 1)
    scores = [torch.zeros(1, n, 3) for n in rows]
    boxes = [torch.full((1, n, 32), FAR) for n in rows]
    # Stride 8, cell (x 3, y 2): centre ((3 + 0.5) 8, (2 + 0.5) 8) = (28, 20); 2 bins each side: 16 pixels.
    scores[0][0, 2 * 8 + 3, 0] = 0.9
    boxes[0][0, 2 * 8 + 3] = one_hot_bins(2, 2, 2, 2)
    # Stride 16, cell (1, 1): centre (24, 24); left 1 bin (16), top 0.5 (8), right 0, bottom 1 (16).
    scores[1][0, 1 * 4 + 1, 2] = 0.7
    boxes[1][0, 1 * 4 + 1] = one_hot_bins(1, 0.5, 0, 1)
    return scores + boxes


@pytest.mark.slow
def test_picodet_distributions_are_decoded_from_cell_centres_per_stride(tmp_path):
    outputs = picodet_outputs()
    file = export(tmp_path, "picodet", Outputs(*outputs), {"image": torch.zeros(1, 3, SIDE, SIDE)},
                  [f"tmp_{i}" for i in range(8)])
    _, module, reading = read(str(file))
    assert reading.layout == "picodet" and reading.details == {"strides": (8, 16, 32, 64), "bins": 8}
    assert "from the rows at 64x64" in reading.why and "assumed" in reading.why
    found = decoded(file, image=np.zeros((1, 3, SIDE, SIDE), np.float32))
    assert found[0] == [pytest.approx([12.0, 4.0, 44.0, 36.0, 0.9, 0], abs=1e-4),
                        pytest.approx([8.0, 16.0, 24.0, 40.0, 0.7, 2], abs=1e-4)]
    images(tmp_path, (32, 64))  # stretched: y halves
    found = detections(tmp_path, file)
    assert found == {"image0": [pytest.approx([12.0, 2.0, 44.0, 18.0, 0.9, 0]),
                                pytest.approx([8.0, 8.0, 24.0, 20.0, 0.7, 2])]}


def test_picodet_takes_its_strides_from_infer_cfg(tmp_path):
    three = [tensor for index, tensor in enumerate(picodet_outputs()) if index not in (3, 7)]  # no stride 64
    file = export(tmp_path, "pico3", Outputs(*three), {"image": torch.zeros(1, 3, SIDE, SIDE)},
                  [f"tmp_{i}" for i in range(6)])
    (tmp_path / "infer_cfg.yml").write_text(INFER_CFG.format(arch="PicoDet", extra="fpn_stride: [8, 16, 32]\n"))
    _, _, reading = read_fresh(file)
    assert reading.layout == "picodet" and reading.details["strides"] == (8, 16, 32)
    assert "from infer_cfg.yml" in reading.why and reading.recipe.mean == (0.485, 0.456, 0.406)
    (tmp_path / "infer_cfg.yml").write_text(INFER_CFG.format(arch="PicoDet", extra="fpn_stride: [8, 16]\n"))
    assert "names 2 strides for 3 heads" in layout("picodet").read(read_exported(file)).reason


# NanoDet-Plus --------------------------------------------------------------------------------------------------

def nanodet_rows() -> torch.Tensor:
    """Strides 8, 16, 32, 64 at 64 x 64: 85 rows of 3 class scores then 4 x 8 bins."""
    raw = torch.zeros(1, 64 + 16 + 4 + 1, 3 + 32)
    # Stride 8, cell (3, 2): corner (24, 16); left 2 bins (16), top 1 (8), right 2, bottom 1: [8, 8, 40, 24].
    raw[0, 2 * 8 + 3, 1] = 0.8
    raw[0, 2 * 8 + 3, 3:] = one_hot_bins(2, 1, 2, 1)
    # Stride 64, its one cell: corner (0, 0); right 2 bins (128) clipped to the input's 64, bottom 1 bin (64).
    raw[0, 84, 2] = 0.5
    raw[0, 84, 3:] = one_hot_bins(0, 0, 2, 1)
    return raw


@pytest.mark.slow
def test_nanodet_distributions_are_decoded_from_cell_corners_and_clipped(tmp_path):
    file = export(tmp_path, "nanodet", Outputs(nanodet_rows()), {"data": torch.zeros(1, 3, SIDE, SIDE)}, ["output"])
    _, module, reading = read(str(file))
    assert reading.layout == "nanodet" and reading.classes == 3 and not reading.assumed
    found = decoded(file, data=np.zeros((1, 3, SIDE, SIDE), np.float32))
    assert found[0] == [pytest.approx([8.0, 8.0, 40.0, 24.0, 0.8, 1], abs=1e-4),
                        pytest.approx([0.0, 0.0, 64.0, 64.0, 0.5, 2], abs=1e-4)]
    images(tmp_path, (32, 64))  # stretched: y halves
    found = detections(tmp_path, file)
    assert found == {"image0": [pytest.approx([8.0, 4.0, 40.0, 12.0, 0.8, 1]),
                                pytest.approx([0.0, 0.0, 64.0, 32.0, 0.5, 2])]}


def test_nanodet_normalises_bgr_in_0_255_by_its_own_mean_and_std():
    image = np.zeros((8, 8, 3), np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 10, 20, 30  # B, G, R
    tensor = Prepare(layout("nanodet").RECIPE, (8, 8))([image]).tensor
    expected = [(10 - 103.53) / 57.375, (20 - 116.28) / 57.12, (30 - 123.675) / 58.395]  # B, G, R planes
    assert tensor[0, :, 0, 0].tolist() == pytest.approx(expected)


def test_nanodet_rows_under_other_names_are_assumed_beside_yolov5(tmp_path):
    file = export(tmp_path, "unnamed", Outputs(nanodet_rows()), {"images": torch.zeros(1, 3, SIDE, SIDE)},
                  ["output0"])
    with pytest.raises(ExportedFileError) as refusal:
        read_fresh(file)
    assert "`nanodet`" in str(refusal.value) and "set model.head" in str(refusal.value)


# Telling them apart ---------------------------------------------------------------------------------------------

def test_each_new_layout_refuses_the_others_files(tmp_path):
    files = {
        "yolonas": export(tmp_path, "a", Outputs(*yolonas_candidates(1000)), {"images": torch.zeros(1, 3, 64, 64)},
                          ["pre_nms_bboxes_xyxy", "pre_nms_scores"]),
        "yolonas_flat": export(tmp_path, "b", Outputs(torch.zeros(2, 7), batched=False),
                               {"images": torch.zeros(1, 3, 64, 64, dtype=torch.uint8)}, ["flat_predictions"]),
        "paddle_nms": export(tmp_path, "c", MulticlassNms(), paddle_inputs(), ["dets", "count"], PADDLE_AXES),
        "picodet": export(tmp_path, "d", Outputs(*picodet_outputs()), {"image": torch.zeros(1, 3, 64, 64)},
                          [f"o{i}" for i in range(8)]),
        "nanodet": export(tmp_path, "e", Outputs(nanodet_rows()), {"data": torch.zeros(1, 3, 64, 64)}, ["output"]),
    }
    from pipelines.exported.layouts.contract import Misfit

    for name, file in files.items():
        exported = read_exported(file)
        assert read_fresh(file)[2].layout == name
        for other in ("yolonas", "yolonas_flat", "yolonas_batch", "paddle_nms", "ppyoloe", "picodet", "nanodet"):
            if other != name:
                assert isinstance(layout(other).read(exported), Misfit), (name, other)
