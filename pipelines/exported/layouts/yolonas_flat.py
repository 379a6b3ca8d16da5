"""YOLO-NAS as super-gradients exports it with NMS and preprocessing in the graph, in its "flat" format: one
output (K, 7) of every image's detections, each row its image's index in the batch, x1, y1, x2, y2 in input
pixels, score and class. The graph takes the letterboxed 8-bit RGB image and normalises it itself; its batch is
fixed (super-gradients exports a static shape), which says how many images the rows stand for."""
from __future__ import annotations

from pipelines.exported.decoding import padded, rows
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import NAMED, SIGNED, Misfit, Reading, fixed, named_as_exported, only_the_image
from pipelines.exported.layouts.yolonas import RECIPE  # noqa: F401 (the same author's recipe)

SUMMARY = ("YOLO-NAS (super-gradients `export`, NMS inside, flat format)", "(K, 7)",
           "image index, x1, y1, x2, y2 in input pixels, score, class", "the score cut only",
           "one output (K, 7), named `flat_predictions`; a fixed batch")
NMS = False  # RECIPE: yolonas's (the graph takes the uint8 pixels and divides by 255 itself)
BOXES = "input"
CLIP = False  # super-gradients' predict keeps boxes past the image as the graph gives them
NAME = "flat_predictions"
CLASSES = 80  # its COCO models', where the file names none
DEPLOYED = {"conf_thres": 0.25}  # the graph's own cut came first (the exporter's confidence_threshold)


def read(file: ExportedFile):
    outputs = file.outputs
    if not only_the_image(file) or len(outputs) != 1 or len(outputs[0].shape) != 2 or fixed(outputs[0].shape[1]) != 7:
        return Misfit("it has one input and one (K, 7) output")
    batch = fixed(file.image_input.shape[0])
    if batch is None:
        return Misfit("its rows name their image by index, and only a fixed batch says how many images there are")
    names = file.names()
    sure, why = (NAMED, f"output {NAME} (super-gradients)") if named_as_exported(file, [NAME]) else (
        SIGNED, "one (K, 7) output: image index, corners, score, class")
    return Reading("yolonas_flat", len(names) if names else CLASSES, why, sure, details={"batch": batch})


def raw(outputs, reading: Reading, height: int, width: int):
    flat = outputs[0].float()
    image = flat[:, 0].long()
    return padded([rows(flat[image == index, 1:5], flat[image == index, 5], flat[image == index, 6])
                   for index in range(reading.details["batch"])])
