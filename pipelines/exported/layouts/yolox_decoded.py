"""YOLOX exported with `--decode_in_inference`: the same (B, A, 5 + C) output as the default export (yolox), one row
per cell of the stride 8, 16 and 32 grids, but decoded in the graph: cx, cy, w, h in input pixels, then
objectness and class scores (sigmoid applied); NMS follows, class-agnostic as YOLOX's demo does. The file's
shape is also a YOLOv5 export's and an undecoded YOLOX's, and nothing in it says which: read only where
`model.head` names it. YOLOX's own preprocessing (yolox.RECIPE)."""
from __future__ import annotations

from dataclasses import replace

from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts import yolox
from pipelines.exported.layouts.contract import POSSIBLE, Misfit, Reading

SUMMARY = ("YOLOX (its export tool with `--decode_in_inference`)", "(B, A, 5 + C), one row per grid cell",
           "cx, cy, w, h in input pixels, objectness, class scores", "NMS, class-agnostic",
           "only by `model.head`: the shape is also YOLOv5's and the undecoded YOLOX's")
RECIPE = yolox.RECIPE
NMS = True
AGNOSTIC = yolox.AGNOSTIC
BOXES = "input"
CLIP = yolox.CLIP
DEPLOYED = yolox.DEPLOYED


def read(file: ExportedFile):
    answer = yolox.read(file)
    if isinstance(answer, Misfit):
        return answer
    return replace(answer, layout="yolox_decoded", why=answer.why.replace("YOLOX's undecoded rows",
                                                                          "YOLOX's decoded rows"),
                   confidence=POSSIBLE)


def raw(outputs, reading: Reading, height: int, width: int):
    return outputs[0].float()
