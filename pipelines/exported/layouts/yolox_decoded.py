"""YOLOX exported with `--decode_in_inference`: the same (B, A, 5 + C) output as the default export (yolox), one row
per cell of the stride 8, 16 and 32 grids, but decoded in the graph: cx, cy, w, h in input pixels, then
objectness and class scores (sigmoid applied); NMS follows, class-agnostic as YOLOX's demo does. The file's
shape is also a YOLOv5 export's and an undecoded YOLOX's: an ONNX graph whose decode takes an exp and squares
nothing is assumed YOLOX's (beside the YOLOv5 reading, so `model.head` chooses); else read only where `model.head`
names it. YOLOX's own preprocessing (yolox.RECIPE)."""
from __future__ import annotations

from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts import yolox
from pipelines.exported.layouts.contract import ASSUMED, POSSIBLE, Misfit, Reading

SUMMARY = ("YOLOX (its export tool with `--decode_in_inference`)", "(B, A, 5 + C), one row per grid cell",
           "cx, cy, w, h in input pixels, objectness, class scores", "NMS, class-agnostic",
           "by `model.head`: the shape is also YOLOv5's and the undecoded YOLOX's (an exp in its decode, no `** 2`, "
           "names both)")
RECIPE = yolox.RECIPE
NMS = True
AGNOSTIC = yolox.AGNOSTIC
BOXES = "input"
CLIP = yolox.CLIP
DEPLOYED = yolox.DEPLOYED


def read(file: ExportedFile):
    found = yolox.rows_of_cells(file)
    if isinstance(found, Misfit):
        return found
    classes, on_cells = found
    tail = file.after_convolutions
    # YOLOX's decode ends in exp(log size) x stride, where YOLOv5's and YOLOv7's square their sizes (** 2).
    if on_cells and tail is not None and "Exp" in tail.ops and "Pow" not in tail.ops:
        return Reading("yolox_decoded", classes, f"{yolox.CELLS}, decoded in the graph by exp, as YOLOX's decode "
                       "does", ASSUMED)
    return Reading("yolox_decoded", classes, "output (B, A, 5 + C) read as YOLOX's decoded rows", POSSIBLE)


def raw(outputs, reading: Reading, height: int, width: int):
    return outputs[0].float()
