"""An application of its own that runs an exported detector as many deployments do, not as its exporter: BGR
input, the image padded at the bottom and right to a square with 0 before it is resized (OpenCV's blobFromImage
on the padded square), one NMS over every class at once. It reads the ONNX file with ONNX Runtime and does
everything else with OpenCV, numpy and torchvision's NMS, none of detbench's code, so `match` is tested against
an application, not against itself. The network: a small convolutional YOLOv8-style head, exported with
Ultralytics' metadata, whose exporter's recipe (RGB, centred letterbox, grey 114, NMS class by class) is not the
application's."""
from __future__ import annotations

import csv
import warnings
from pathlib import Path

import cv2
import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn
from torchvision.ops import nms

SIDE, STRIDE, CLASSES = 160, 16, 3
CUT, IOU = 0.5, 0.45


class GridDetector(nn.Module):
    """Convolutions down to a stride-16 grid, each cell a box around it (up to 6 cells wide) and class scores:
    (1, 4 + C, cells), as Ultralytics' YOLOv8 exports."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        layers, channels = [], 3
        for width in (8, 16, 16, 16):
            layers += [nn.Conv2d(channels, width, 3, stride=2, padding=1), nn.ReLU()]
            channels = width
        self.features = nn.Sequential(*layers)
        self.head = nn.Conv2d(channels, 4 + CLASSES, 1)
        with torch.no_grad():  # spread so that scores follow the pixels: about a tenth of the cells per class pass
            for layer in self.features[::2]:
                layer.weight.mul_(3.0)
            self.head.weight.mul_(4.0)
        self.register_buffer("offsets", torch.tensor([0.62, -0.24, 0.03])[None, :, None])
        cells = SIDE // STRIDE
        y, x = torch.meshgrid(torch.arange(cells), torch.arange(cells), indexing="ij")
        self.register_buffer("grid", torch.stack((x, y)).reshape(1, 2, -1).float() + 0.5)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        out = self.head(self.features(images)).flatten(2)
        centres = (self.grid + out[:, :2].tanh()) * STRIDE
        sizes = out[:, 2:4].sigmoid() * 6 * STRIDE
        return torch.cat((centres, sizes, ((out[:, 4:] - self.offsets) * 8).sigmoid()), dim=1)


def export_detector(folder: Path) -> Path:
    path = folder / "grid.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(GridDetector().eval(), (torch.zeros(1, 3, SIDE, SIDE),), str(path), dynamo=False,
                          opset_version=17, input_names=["images"], output_names=["output0"])
    model = onnx.load(str(path))
    for key, value in {"author": "Ultralytics", "task": "detect", "names": {i: f"c{i}" for i in range(CLASSES)},
                       "imgsz": [SIDE, SIDE]}.items():
        model.metadata_props.add(key=key, value=str(value))
    onnx.save(model, str(path))
    return path


def application_detections(file: Path, images: list[Path], out: Path) -> int:
    """The application's detections of every image, written to `out` as detections.csv's columns; their count."""
    session = ort.InferenceSession(str(file), providers=["CPUExecutionProvider"])
    rows = []
    for path in images:
        image = cv2.imread(str(path))  # BGR, and fed so
        height, width = image.shape[:2]
        side = max(height, width)
        square = cv2.copyMakeBorder(image, 0, side - height, 0, side - width, cv2.BORDER_CONSTANT, value=0)
        blob = cv2.dnn.blobFromImage(square, 1 / 255.0, (SIDE, SIDE), (0, 0, 0), swapRB=False, crop=False)
        raw = session.run(None, {"images": blob})[0][0].T  # (cells, 4 + C)
        scores, classes = raw[:, 4:].max(axis=1), raw[:, 4:].argmax(axis=1)
        keep = scores > CUT
        boxes = np.concatenate((raw[:, :2] - raw[:, 2:4] / 2, raw[:, :2] + raw[:, 2:4] / 2), axis=1)[keep]
        kept = nms(torch.from_numpy(boxes).float(), torch.from_numpy(scores[keep]).float(), IOU).numpy()
        boxes = boxes * side / SIDE  # one scale back; nothing to take off at the top left
        boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, width)
        boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, height)
        for index in kept:
            rows.append([path.name, int(classes[keep][index]), f"{scores[keep][index]:.5f}",
                         *(f"{value:.2f}" for value in boxes[index])])
    with out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["image", "class_id", "score", "x1", "y1", "x2", "y2"])
        writer.writerows(rows)
    return len(rows)
