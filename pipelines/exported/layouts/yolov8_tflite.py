"""YOLOv8, YOLO11 and YOLO26 (NMS mode) as TFLite files: one (B, 4 + C, N) output as the ONNX export's (layout
yolov8), cx, cy, w, h then class scores, the boxes either normalised to the input or in its pixels. Ultralytics'
current TFLite export (litert-torch, NCHW input) divides them by the input size so that an int8 file keeps its
score resolution; the files of its onnx2tf path (format saved_model in Ultralytics 8.4, NHWC input) and a plain
onnx2tf conversion of a YOLO ONNX keep pixels. Which unit a file holds shows in the boxes themselves: the N anchor
centres cover the whole input, so the largest centre is about 1 when normalised and about the input's size in
pixels; each batch is read by that."""
from __future__ import annotations

import torch

from pipelines.exported.decoding import yolov8_as_yolov5, yolov8_rows_passing
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts import yolov8
from pipelines.exported.layouts.contract import Misfit, Reading
from pipelines.exported.recipe import YOLO

SUMMARY = ("YOLOv8, YOLO11, YOLO26 (NMS mode) as TFLite (Ultralytics' litert-torch or onnx2tf export)",
           "(B, 4 + C, N)", "cx, cy, w, h normalised to the input (litert-torch) or in its pixels (onnx2tf), class "
           "scores", "NMS, class-aware", "a TFLite file with channels before anchors; the unit by the anchor "
           "centres' range")
RECIPE = YOLO
NMS = True
BOXES = "input"
NORMALISED_LIMIT = 2.0  # normalised centres stay within about 0 to 1; pixel ones reach the input's size


def read(file: ExportedFile):
    if file.format != "tflite":
        return Misfit("it is a TFLite file (an ONNX or IR export's boxes are in pixels: yolov8)")
    reading = yolov8.channels_before_anchors(file)
    if isinstance(reading, Misfit):
        return reading
    said = "Ultralytics' TFLite export (its metadata)" if file.names() is not None else "a TFLite file"
    return Reading("yolov8_tflite", reading.classes, f"{said}, output (B, 4 + C, N): channels before anchors")


def in_pixels(output: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(B, 4 + C, N) with its boxes in input pixels: multiplied by the input's size where the anchor centres show
    them normalised (a copy then; else the output itself)."""
    output = output.float()
    if not bool(output[:, :2].amax() <= NORMALISED_LIMIT):
        return output
    output = output.clone()
    output[:, :4] *= output.new_tensor([width, height, width, height])[None, :, None]
    return output


def raw(outputs, reading: Reading, height: int, width: int):
    return yolov8_as_yolov5(in_pixels(outputs[0], height, width))


def passing(outputs, reading: Reading, height: int, width: int, conf_thres: float):
    return yolov8_rows_passing(in_pixels(outputs[0], height, width), conf_thres)
