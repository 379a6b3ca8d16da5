"""DETRs that export their postprocessing in the graph, as D-FINE, DEIM, DEIMv2 and RT-DETRv2's own export scripts
write them: inputs `images` and `orig_target_sizes` (each image's width and height), outputs `labels` (B, K),
`boxes` (B, K, 4) x1, y1, x2, y2 in the original image's pixels and `scores` (B, K), the top K (query, class)
pairs already chosen. The image is stretched to the input with PIL's resize and `ToTensor()`: RGB over 255, no
mean or std."""
from __future__ import annotations

from dataclasses import replace

from pipelines.exported.decoding import rows
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import Misfit, Reading, SIGNED, fixed, named
from pipelines.exported.recipe import YOLO

SUMMARY = ("D-FINE, DEIM, DEIMv2, RT-DETRv2 (their export scripts)",
           "`labels` (B, K), `boxes` (B, K, 4), `scores` (B, K)", "x1, y1, x2, y2 in original pixels, score, class",
           "the score cut only", "a second input of (B, 2) original sizes; three outputs")
RECIPE = replace(YOLO, resize="stretch", resampler="pil")
NMS = False
BOXES = "original"
CLIP = False  # the graph scales boxes by the original size without clamping, and tools/inference keeps them
CLASSES = 80  # their COCO heads' classes, where the file names none


def read(file: ExportedFile):
    if len(file.inputs) != 2 or len(file.outputs) != 3:
        return Misfit("it takes the images and their original sizes, and returns labels, boxes and scores")
    sizes = file.inputs[1]
    if len(sizes.shape) != 2 or fixed(sizes.shape[1]) != 2:
        return Misfit(f"its second input is (B, 2) original sizes, not {list(sizes.shape)}")
    roles = named(file, "labels", "boxes", "scores")
    if roles is None:
        ranked = {len(t.shape): i for i, t in enumerate(file.outputs)}
        two_d = [i for i, t in enumerate(file.outputs) if len(t.shape) == 2]
        if 3 not in ranked or len(two_d) != 2:
            return Misfit("its outputs are (B, K) labels, (B, K, 4) boxes and (B, K) scores")
        labels = next((i for i in two_d if file.outputs[i].dtype.startswith("int")), two_d[0])
        roles = [labels, ranked[3], next(i for i in two_d if i != labels)]
    names = file.names()
    return Reading("dfine", len(names) if names else CLASSES, f"inputs images and {sizes.name} (original sizes); "
                   "outputs labels, boxes, scores", SIGNED, roles=dict(zip(("labels", "boxes", "scores"), roles)),
                   extra_inputs={sizes.name: "original_wh"})


def raw(outputs, reading: Reading, height: int, width: int):
    return rows(outputs[reading.roles["boxes"]], outputs[reading.roles["scores"]], outputs[reading.roles["labels"]])
