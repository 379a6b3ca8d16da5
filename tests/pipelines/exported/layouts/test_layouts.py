"""The layouts authors export beyond Ultralytics' YOLOs (pipelines/exported/layouts/): each read from a small
export made here from a torch module with hand-placed outputs, decoded, and mapped back to the original image
by the layout's own recipe (pipelines/exported/preparing.py), against hand-computed boxes. No author's package
is imported: the facts of each format are the authors', the exports are ours."""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import onnx
import pytest
import torch
from torch import nn

from pipelines.exported import facts
from pipelines.exported.facts import read
from pipelines.exported.inspection import ExportedFileError
from pipelines.exported.preparing import Prepare, Restore, placement
from pipelines.exported.recipe import Recipe
from pipelines.settings import NO_CAP
from tests.pipelines.exported.test_exported import SIDE, export, run

NAMES = {0: "a", 1: "b", 2: "c"}


def image_folder(tmp_path: Path, height: int, width: int, bgr=(90, 90, 90)) -> Path:
    folder = tmp_path / "images"
    folder.mkdir(exist_ok=True)
    cv2.imwrite(str(folder / "square.png"), np.full((height, width, 3), bgr, np.uint8))
    return folder


def detections(tmp_path: Path, file: Path, *overrides: str) -> list[list[float]]:
    """The run's detections.csv rows as x1, y1, x2, y2, score, class, on the images of image_folder()."""
    run_id = f"{file.stem}-{len(list((tmp_path / 'out').glob('*'))) if (tmp_path / 'out').exists() else 0}"
    run(tmp_path, file, f"dataset.path={tmp_path / 'images'}", f"run.id={run_id}", *overrides)
    lines = (tmp_path / "out" / run_id / "detections.csv").read_text().splitlines()[1:]
    rows = [line.split(",") for line in lines]  # image, class_id, class_name, score, x1, y1, x2, y2
    return [[float(v) for v in row[4:8]] + [float(row[3]), float(row[1])] for row in rows]


def logit(p: float) -> float:
    return math.log(p / (1 - p))


# The recipe's arithmetic --------------------------------------------------------------------------------------

def test_where_an_image_lands_in_each_resize():
    # 100 x 200 into 64 x 64: Ultralytics' letterbox centres 32 rows of content (16 above), YOLOX's puts them at
    # the top left, a stretch scales each axis on its own.
    centred = placement(100, 200, (64, 64), "letterbox")
    assert (centred.size, centred.scale_x, centred.scale_y, centred.left, centred.top) == ((64, 32), 0.32, 0.32, 0, 16)
    corner = placement(100, 200, (64, 64), "letterbox_corner")
    assert (corner.size, corner.scale_x, corner.left, corner.top) == ((64, 32), 0.32, 0, 0)
    # YOLOX truncates where Ultralytics rounds: at ratio 0.64, 35 rows become 22.4 (22 either way), 37 rows 23.68.
    assert placement(35, 100, (64, 64), "letterbox_corner").size == (64, 22)
    assert placement(35, 100, (64, 64), "letterbox").size == (64, 22)
    assert placement(37, 100, (64, 64), "letterbox_corner").size == (64, 23)  # 23.68 truncated
    assert placement(37, 100, (64, 64), "letterbox").size == (64, 24)  # 23.68 rounded
    stretched = placement(100, 200, (64, 32), "stretch")
    assert (stretched.size, stretched.scale_x, stretched.scale_y) == ((32, 64), 0.16, 0.64)
    # Pad-then-resize: the 200 x 200 square fills the input, 0.32 a pixel, its pad resized with it.
    square = placement(100, 200, (64, 64), "pad_resize_corner")
    assert (square.size, square.scale_x, square.scale_y, square.left, square.top) == ((64, 64), 0.32, 0.32, 0, 0)


def test_pad_resize_corner_resizes_the_padded_square_and_maps_boxes_back_by_its_scale():
    image = np.full((30, 40, 3), 200, np.uint8)  # padded with 0 to 40 x 40, then to 20 x 20: 0.5 a pixel
    recipe = Recipe(resize="pad_resize_corner", channels="bgr", scale=1.0, pad_value=0)
    batch = Prepare(recipe, (20, 20))([image])
    expected = cv2.resize(cv2.copyMakeBorder(image, 0, 10, 0, 0, cv2.BORDER_CONSTANT, value=(0, 0, 0)), (20, 20))
    assert torch.equal(batch.tensor[0], torch.from_numpy(expected.transpose(2, 0, 1).astype(np.float32)))
    assert batch.tensor[0, 0, 14, 0] == 200 and batch.tensor[0, 0, 15, 0] == 0  # the image's 15 rows, then pad
    found = Restore()([torch.tensor([[2.0, 3.0, 12.0, 14.0, 0.9, 1.0]])], batch)[0]
    assert found[0].tolist() == pytest.approx([4.0, 6.0, 24.0, 28.0, 0.9, 1.0])  # / 0.5, nothing to take off


def test_a_recipe_orders_channels_scales_and_pads_as_its_author_does():
    image = np.zeros((32, 64, 3), np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 10, 20, 30  # B, G, R
    yolox = Prepare(Recipe(resize="letterbox_corner", channels="bgr", scale=1.0), (64, 64))([image])
    assert yolox.tensor[0, :, 0, 0].tolist() == [10.0, 20.0, 30.0]  # BGR, 0-255
    assert yolox.tensor[0, :, 40, 0].tolist() == [114.0] * 3  # padded below, none above
    yolo = Prepare(Recipe(), (64, 64))([image])
    assert yolo.tensor[0, :, 16, 0].tolist() == pytest.approx([30 / 255, 20 / 255, 10 / 255])  # RGB / 255
    assert yolo.tensor[0, 0, 0, 0].item() == torch.tensor(114, dtype=torch.uint8).div(255.0).item()
    normalised = Prepare(Recipe(resize="stretch", mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 1.0)), (8, 8))([image])
    assert normalised.tensor[0, :, 0, 0].tolist() == pytest.approx([(30 / 255 - 0.5) / 0.25, (20 / 255 - 0.5) / 0.5,
                                                                   10 / 255 - 0.5])
    eight_bit = Prepare(Recipe(input_type="uint8"), (64, 64))([image])
    assert eight_bit.tensor.dtype == torch.uint8 and eight_bit.tensor[0, :, 16, 0].tolist() == [30, 20, 10]


def test_the_pil_resampler_resizes_as_pil_does():
    from PIL import Image

    image = np.random.default_rng(0).integers(0, 256, (97, 131, 3), dtype=np.uint8)  # BGR
    ours = Prepare(Recipe(resize="stretch", resampler="pil", scale=1.0), (40, 64))([image]).tensor[0]
    theirs = np.asarray(Image.fromarray(image[..., ::-1].copy()).resize((64, 40), Image.BILINEAR))
    assert torch.equal(ours, torch.from_numpy(theirs.transpose(2, 0, 1).astype(np.float32)))
    opencv = Prepare(Recipe(resize="stretch", resampler="opencv", scale=1.0), (40, 64))([image]).tensor[0]
    assert (opencv - ours).abs().mean() > 5  # OpenCV's linear resize does not filter what a shrink skips


def test_the_torch_resamplers_resize_as_torchvision_does_with_and_without_antialias():
    import torchvision.transforms.functional as TF

    image = np.random.default_rng(1).integers(0, 256, (97, 131, 3), dtype=np.uint8)  # BGR, shrunk to 40 x 64
    rgb = TF.to_tensor(image[..., ::-1].copy())  # rfdetr's predict: to_tensor, resize, then normalise
    for resampler, antialias in (("torch", False), ("torch_antialias", True)):
        ours = Prepare(Recipe(resize="stretch", resampler=resampler), (40, 64))([image]).tensor[0]
        torch.testing.assert_close(ours, TF.resize(rgb, [40, 64], antialias=antialias), rtol=0, atol=1e-6)
    plain, smoothed = (Prepare(Recipe(resize="stretch", resampler=r), (40, 64))([image]).tensor for r in
                       ("torch", "torch_antialias"))
    assert (plain - smoothed).abs().mean() > 0.02  # rfdetr 1.8's input and 1.9's are not the same image


def test_extra_inputs_are_filled_per_image():
    images = [np.zeros((100, 200, 3), np.uint8), np.zeros((50, 50, 3), np.uint8)]
    batch = Prepare(Recipe(resize="stretch"), (64, 64), {"orig_target_sizes": "original_wh",
                                                         "scale_factor": "scale_yx", "im_shape": "input_hw"})(images)
    assert batch.extra["orig_target_sizes"].tolist() == [[200, 100], [50, 50]]
    assert batch.extra["orig_target_sizes"].dtype == np.int64
    assert np.allclose(batch.extra["scale_factor"], [[0.64, 0.32], [1.28, 1.28]])
    assert batch.extra["im_shape"].tolist() == [[64.0, 64.0], [64.0, 64.0]]


# Ultralytics' RT-DETR (8.4) against an end-to-end YOLO head -----------------------------------------------------

def rtdetr_rows() -> torch.Tensor:
    raw = torch.zeros(1, 300, 6)
    raw[0, 0] = torch.tensor([0.5, 0.5, 0.25, 0.5, 0.9, 1.0])  # centre of the input, a quarter wide, half tall
    raw[0, 1] = torch.tensor([0.95, 0.5, 0.3, 0.5, 0.8, 0.0])  # reaching past the input's right edge
    return raw


@pytest.mark.slow
def test_ultralytics_rtdetr_is_told_from_an_end_to_end_head_by_its_metadata(tmp_path):
    metadata = {"names": NAMES, "head": "RTDETRDecoder", "description": "Ultralytics rtdetr-l model ",
                "end2end": False}
    file = export(tmp_path, "rtdetr84", rtdetr_rows(), metadata=metadata)
    _, layout, reading = read(str(file))
    assert reading.layout == "rtdetr_e2e" and not reading.assumed and layout.RECIPE.resize == "stretch"
    image_folder(tmp_path, SIDE, 2 * SIDE)  # stretched: x doubles back
    found = detections(tmp_path, file, f"preprocess.img_size={SIDE}")
    # Ultralytics' RT-DETR predict does not clip: the second box ends at (0.95 + 0.15) x 128 = 140.8 of 128.
    assert found == [pytest.approx([48.0, 16.0, 80.0, 48.0, 0.9, 1]), pytest.approx([102.4, 16.0, 140.8, 48.0, 0.8, 0])]


def test_six_columns_without_metadata_name_both_readings_and_the_key(tmp_path):
    file = export(tmp_path, "six", rtdetr_rows())
    with pytest.raises(ExportedFileError) as refusal:
        read(str(file))
    message = str(refusal.value)
    assert "`end2end`" in message and "`rtdetr_e2e`" in message and "set model.head" in message
    assert read(str(file), "rtdetr_e2e")[2].layout == "rtdetr_e2e"
    nms = export(tmp_path, "nms", rtdetr_rows(), metadata={"names": NAMES, "args": {"nms": True}, "head": "Detect"})
    assert read(str(nms))[2].layout == "end2end"


# RF-DETR / LW-DETR and Hugging Face's DETR ---------------------------------------------------------------------

@pytest.mark.slow
def test_rfdetr_keeps_the_best_query_class_pairs_and_maps_cocos_ids(tmp_path):
    boxes, logits = torch.zeros(1, 50, 4), torch.full((1, 50, 91), -12.0)
    boxes[0, 7] = torch.tensor([0.25, 0.25, 0.5, 0.5])  # [0, 0, 32, 32] in a 64-pixel input
    logits[0, 7, 1] = logit(0.9)  # COCO id 1: the first class (person)
    logits[0, 7, 3] = logit(0.6)  # the same query under COCO id 3 (car): a second pair, kept as RF-DETR does
    logits[0, 7, 12] = logit(0.95)  # id 12 is unused by COCO: never a detection
    file = export(tmp_path, "rfdetr", boxes, logits)
    model = onnx.load(str(file))  # rfdetr's own output names
    for output, name in zip(model.graph.output, ("dets", "labels")):
        for node in model.graph.node:
            node.output[:] = [name if value == output.name else value for value in node.output]
        output.name = name
    onnx.save(model, str(file))
    _, layout, reading = read(str(file))
    assert reading.layout == "detr" and reading.classes == 80 and "COCO category id" in reading.why
    assert layout.RECIPE.resampler == "torch" and layout.RECIPE.mean == (0.485, 0.456, 0.406)
    image_folder(tmp_path, SIDE, SIDE)
    found = detections(tmp_path, file, f"preprocess.img_size={SIDE}")
    assert found == [pytest.approx([0.0, 0.0, 32.0, 32.0, 0.9, 0], abs=1e-4),
                     pytest.approx([0.0, 0.0, 32.0, 32.0, 0.6, 2], abs=1e-4)]


@pytest.mark.slow
def test_hugging_face_detr_scores_by_softmax_without_the_no_object_class(tmp_path):
    logits, boxes = torch.zeros(1, 20, 4), torch.zeros(1, 20, 4)
    logits[0, :, 3] = 5.0  # every query is no-object...
    logits[0, 2] = torch.tensor([4.0, 0.0, 0.0, 1.0])  # ...but query 2, class 0
    boxes[0, 2] = torch.tensor([0.5, 0.5, 0.5, 0.5])
    file = export(tmp_path, "hfdetr", logits, boxes)
    model = onnx.load(str(file))
    for output, name in zip(model.graph.output, ("logits", "pred_boxes")):
        for node in model.graph.node:
            node.output[:] = [name if value == output.name else value for value in node.output]
        output.name = name
    model.graph.input[0].type.tensor_type.shape.dim[1].dim_param = "num_channels"  # as optimum names it
    onnx.save(model, str(file))
    assert read(str(file))[2].layout == "hf_detr" and read(str(file))[2].classes == 3
    image_folder(tmp_path, SIDE, SIDE)
    found = detections(tmp_path, file, f"preprocess.img_size={SIDE}")
    expected = math.exp(4.0) / (math.exp(4.0) + 2 + math.exp(1.0))
    assert found == [pytest.approx([16.0, 16.0, 48.0, 48.0, expected, 0], abs=1e-4)]


@pytest.mark.slow
def test_hugging_face_detrs_without_no_object_slot_take_sigmoid_top_pairs_from_config_json(tmp_path):
    # Deformable DETR: config.json counts 3 labels for 3 slots, so no slot is no-object; its processor keeps the
    # top 100 (query, class) pairs of the sigmoid, and preprocessor_config.json says no mean and std.
    logits, boxes = torch.full((1, 20, 3), -10.0), torch.zeros(1, 20, 4)
    logits[0, 2] = torch.tensor([2.0, -10.0, 1.0])  # query 2 stands under classes 0 and 2
    boxes[0, 2] = torch.tensor([0.5, 0.5, 0.5, 0.5])
    file = export(tmp_path, "hfdeformable", logits, boxes)
    model = onnx.load(str(file))
    for output, name in zip(model.graph.output, ("logits", "pred_boxes")):
        for node in model.graph.node:
            node.output[:] = [name if value == output.name else value for value in node.output]
        output.name = name
    onnx.save(model, str(file))
    labels = {str(i): name for i, name in NAMES.items()}
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "deformable_detr", "id2label": labels}))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"do_normalize": False, "resample": 2}))
    reading = read(str(file))[2]
    assert (reading.classes, reading.details) == (3, {"activation": "sigmoid", "top": 100})
    assert reading.recipe.mean == (0.0, 0.0, 0.0) and reading.recipe.std == (1.0, 1.0, 1.0)
    image_folder(tmp_path, SIDE, SIDE)
    found = detections(tmp_path, file, f"preprocess.img_size={SIDE}")
    box = [16.0, 16.0, 48.0, 48.0]
    assert found == [pytest.approx(box + [1 / (1 + math.exp(-2.0)), 0], abs=1e-4),
                     pytest.approx(box + [1 / (1 + math.exp(-1.0)), 2], abs=1e-4)]


# D-FINE, DEIM, RT-DETRv2: postprocessing in the graph, fed the original sizes ---------------------------------------

class PostprocessedDetr(nn.Module):
    """As D-FINE's deploy graph: fixed normalised boxes scaled by each image's (w, h) from the second input."""

    def forward(self, images: torch.Tensor, orig_target_sizes: torch.Tensor):
        touch = images.mean() * 0
        sizes = orig_target_sizes.to(torch.float32).repeat(1, 2)[:, None, :]  # (B, 1, 4): w, h, w, h
        normalised = torch.tensor([[0.25, 0.25, 0.5, 0.5], [0.0, 0.0, 1.0, 1.0]])[None]
        boxes = normalised * sizes + touch
        labels = torch.tensor([[2, 0]]).expand(images.shape[0], -1)
        scores = torch.tensor([[0.8, 0.1]]).expand(images.shape[0], -1) + touch
        return labels, boxes, scores


@pytest.mark.slow
def test_dfine_takes_the_original_sizes_and_gives_boxes_in_original_pixels(tmp_path):
    file = tmp_path / "dfine.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(PostprocessedDetr(), (torch.zeros(1, 3, SIDE, SIDE), torch.tensor([[SIDE, SIDE]])),
                          str(file), dynamo=False, opset_version=17, input_names=["images", "orig_target_sizes"],
                          output_names=["labels", "boxes", "scores"],
                          dynamic_axes={"images": {0: "N"}, "orig_target_sizes": {0: "N"}})
    _, layout, reading = read(str(file))
    assert reading.layout == "dfine" and dict(reading.extra_inputs) == {"orig_target_sizes": "original_wh"}
    assert layout.BOXES == "original" and layout.RECIPE.resampler == "pil" and layout.RECIPE.mean == (0, 0, 0)
    image_folder(tmp_path, 64, 128)  # h 64, w 128: the box is [32, 16, 64, 32] there
    for backend in ("onnxruntime", "openvino"):
        found = detections(tmp_path, file, f"preprocess.img_size={SIDE}", f"runtime.backend={backend}",
                           "postprocess.conf_thres=0.5")
        assert found == [pytest.approx([32.0, 16.0, 64.0, 32.0, 0.8, 2])], backend


# YOLOX: undecoded rows over the stride 8, 16, 32 grids ------------------------------------------------------------

@pytest.mark.slow
def test_yolox_rows_are_decoded_on_their_grids_and_divided_by_one_ratio(tmp_path):
    cells = (SIDE // 8) ** 2 + (SIDE // 16) ** 2 + (SIDE // 32) ** 2  # 64 + 16 + 4 rows at 64 x 64
    raw = torch.zeros(1, cells, 5 + 3)
    # Stride 8, cell (x 3, y 2) is row 2 * 8 + 3: centre ((3 + 0.5) 8, (2 + 0.5) 8) = (28, 20), size e^ln2 x 8 = 16.
    raw[0, 19] = torch.tensor([0.5, 0.5, math.log(2), math.log(2), 0.9, 0.0, 0.8, 0.0])
    # Stride 32, cell (1, 0), the last grid's second row: centre (48, 16), size 32.
    raw[0, 64 + 16 + 1] = torch.tensor([0.5, 0.5, 0.0, 0.0, 0.5, 0.0, 0.0, 0.9])
    file = export(tmp_path, "yolox", raw, dynamic=False)
    with pytest.raises(ExportedFileError, match="`yolox`"):
        read(str(file))
    assert read(str(file), "yolox")[2].layout == "yolox"
    # YOLOX's own inference keeps every box its NMS leaves: no cap.
    assert facts.defaults(str(file), SimpleNamespace(head="yolox")).postprocess["max_det"] == NO_CAP
    image_folder(tmp_path, 16, 32)  # ratio 2: boxes halve, the image at the top left
    found = detections(tmp_path, file, "model.head=yolox")
    # 0.9 x 0.8 = 0.72; 0.5 x 0.9 = 0.45; YOLOX's demo cut is 0.3. Both inside the 16 x 32 image.
    assert found == [pytest.approx([10.0, 6.0, 18.0, 14.0, 0.72, 1]), pytest.approx([16.0, 0.0, 32.0, 16.0, 0.45, 2])]


def test_yolox_decoded_in_its_graph_is_read_by_model_head_and_its_nms_is_class_agnostic(tmp_path):
    cells = (SIDE // 8) ** 2 + (SIDE // 16) ** 2 + (SIDE // 32) ** 2
    raw = torch.zeros(1, cells, 5 + 3)
    # Rows in input pixels already: a box at (28, 20) of 16 x 16 scoring 0.9 x 0.8 = 0.72 as class 1, the same box
    # one pixel right as class 2 (0.9 x 0.6 = 0.54, IoU 15/17 with the first), and (48, 16) 32 x 32 at 0.45.
    raw[0, 19] = torch.tensor([28.0, 20.0, 16.0, 16.0, 0.9, 0.0, 0.8, 0.0])
    raw[0, 20] = torch.tensor([29.0, 20.0, 16.0, 16.0, 0.9, 0.0, 0.0, 0.6])
    raw[0, 81] = torch.tensor([48.0, 16.0, 32.0, 32.0, 0.5, 0.0, 0.0, 0.9])
    raw[0, 40] = torch.tensor([60.0, 20.0, 16.0, 16.0, 0.8, 0.5, 0.0, 0.0])  # 0.4, reaching past the image's right
    file = export(tmp_path, "yolox_decoded", raw, dynamic=False)
    with pytest.raises(ExportedFileError, match="`yolov5`"):  # the file does not say it is decoded
        read(str(file))
    assert read(str(file), "yolox_decoded")[2].layout == "yolox_decoded"
    image_folder(tmp_path, 16, 32)  # YOLOX's recipe: ratio 2, the image at the top left
    found = detections(tmp_path, file, "model.head=yolox_decoded")
    # YOLOX's demo suppresses across classes: the class-2 twin of the first box goes (class by class it would stay).
    # Nor does it clip: the last box ends at x 68 / 2 = 34 on an image 32 wide.
    assert found == [pytest.approx([10.0, 6.0, 18.0, 14.0, 0.72, 1]), pytest.approx([16.0, 0.0, 32.0, 16.0, 0.45, 2]),
                     pytest.approx([26.0, 6.0, 34.0, 14.0, 0.4, 0])]


GRID_SIDE = 256


class GridHead(nn.Module):
    """A YOLO head over the stride 8, 16 and 32 grids of a 256 x 256 input (1344 rows, more than a DETR's queries),
    exported as its author would: YOLOX's raw rows (the convolutions, sigmoid and reshapes only), YOLOX's decode
    (exp of the sizes, grid offsets) or YOLOv5's (sigmoid, (2 xy - 0.5 + grid) x stride, (2 wh) ** 2 x anchor)."""

    def __init__(self, decode: str):
        super().__init__()
        self.decode = decode
        self.convs = nn.ModuleList(nn.Conv2d(3, 5 + 3, 1) for _ in range(3))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        levels = []
        for stride, conv in zip((8, 16, 32), self.convs):
            out = conv(nn.functional.avg_pool2d(images, stride)).flatten(2).permute(0, 2, 1)  # (B, cells, 8)
            side = GRID_SIDE // stride
            grid = torch.stack(torch.meshgrid(torch.arange(side), torch.arange(side), indexing="xy"), -1)
            grid = grid.reshape(1, -1, 2).float()
            if self.decode == "yolox":
                out = torch.cat((out[..., :4], out[..., 4:].sigmoid()), -1)
            elif self.decode == "yolox_decoded":
                out = torch.cat(((out[..., :2] + grid) * stride, out[..., 2:4].exp() * stride, out[..., 4:].sigmoid()),
                                -1)
            else:
                y = out.sigmoid()
                out = torch.cat(((y[..., :2] * 2 - 0.5 + grid) * stride, (y[..., 2:4] * 2) ** 2 * 4.0 * stride,
                                 y[..., 4:]), -1)
            levels.append(out)
        return torch.cat(levels, 1)


def grid_head_file(tmp_path: Path, decode: str) -> Path:
    path = tmp_path / f"{decode}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(GridHead(decode).eval(), (torch.zeros(1, 3, GRID_SIDE, GRID_SIDE),), str(path), dynamo=False,
                          opset_version=17, input_names=["images"], output_names=["output"])
    return path


def test_yolox_without_metadata_is_told_from_yolov5_by_what_its_graph_does_after_its_convolutions(tmp_path):
    # One shape, (1, 1344, 8), three exports: only the graph says whose rows they are.
    raw = read(str(grid_head_file(tmp_path, "yolox")))[2]
    assert raw.layout == "yolox" and not raw.assumed and "no arithmetic after the graph's last convolutions" in raw.why
    assert read(str(grid_head_file(tmp_path, "yolov5")))[2].layout == "yolov5"  # it decodes: YOLOv5's ** 2
    with pytest.raises(ExportedFileError) as refusal:  # an exp and no ** 2: YOLOX's decode, or another YOLO's
        read(str(grid_head_file(tmp_path, "yolox_decoded")))
    assert "`yolox_decoded`: " in str(refusal.value) and "`yolov5`" in str(refusal.value)
    assert "`yolox`:" not in str(refusal.value) and "set model.head" in str(refusal.value)


# A file that takes its pixels as uint8 ----------------------------------------------------------------------------

class EightBitInput(nn.Module):
    def forward(self, images: torch.Tensor) -> torch.Tensor:
        level = images.float().mean() / 255.0  # the graph normalises itself
        raw = torch.zeros(1, 4 + 3, 100)
        raw[0, :4, 0] = torch.tensor([32.0, 32.0, 16.0, 16.0])
        return raw.index_put((torch.tensor([0]), torch.tensor([5]), torch.tensor([0])), level.reshape(1))


@pytest.mark.slow
def test_a_graph_that_takes_uint8_pixels_is_fed_them(tmp_path):
    file = tmp_path / "u8.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(EightBitInput(), (torch.zeros(1, 3, SIDE, SIDE, dtype=torch.uint8),), str(file),
                          dynamo=False, opset_version=17, input_names=["images"], output_names=["output0"])
    image_folder(tmp_path, SIDE, SIDE, bgr=(153, 153, 153))
    for backend in ("onnxruntime", "openvino"):
        found = detections(tmp_path, file, f"runtime.backend={backend}")
        assert found == [pytest.approx([24.0, 24.0, 40.0, 40.0, 0.6, 1])], backend  # 153 / 255
