"""YOLOv8, YOLO11 and YOLO26 in NMS mode, as Ultralytics exports them: one (B, 4 + C, N) output, channels before
anchors, of cx, cy, w, h in input pixels and class scores (no objectness); NMS follows."""
from __future__ import annotations

from pipelines.exported.decoding import yolov8_as_yolov5, yolov8_rows_passing
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import Misfit, Reading, fixed, names_fit, only_the_image
from pipelines.exported.recipe import YOLO

SUMMARY = ("YOLOv8, YOLO11, YOLO26 (NMS mode)", "(B, 4 + C, N)", "cx, cy, w, h in input pixels, class scores",
           "NMS, class-aware", "fewer rows than columns: channels before anchors")
RECIPE = YOLO
RECIPE_OF = "Ultralytics"  # the recipe of its predict; its metadata's author names it
NMS = True
BOXES = "input"
WHY = "output (B, 4 + C, N): channels before anchors"


def read(file: ExportedFile):
    if file.format == "tflite":
        return Misfit("a TFLite file may hold its boxes normalised to the input: layout yolov8_tflite")
    return channels_before_anchors(file)


def channels_before_anchors(file: ExportedFile):
    """The reading of one (B, 4 + C, N) output, whatever its boxes' unit."""
    if not only_the_image(file) or len(file.outputs) != 1 or len(file.outputs[0].shape) != 3:
        return Misfit("it has one input and one (B, 4 + C, N) output")
    _, channels, count = file.outputs[0].shape
    if fixed(channels) is None or channels < 5 or (fixed(count) is not None and channels >= count):
        return Misfit(f"its channels (4 + C) come before more anchors: {channels} by {count} here")
    if not names_fit(file, channels - 4):
        return Misfit(f"its metadata names {len(file.names())} classes, and 4 + C channels leave {channels - 4}")
    return Reading("yolov8", channels - 4, WHY)


def raw(outputs, reading: Reading, height: int, width: int):
    return yolov8_as_yolov5(outputs[0].float())


def passing(outputs, reading: Reading, height: int, width: int, conf_thres: float):
    return yolov8_rows_passing(outputs[0].float(), conf_thres)
