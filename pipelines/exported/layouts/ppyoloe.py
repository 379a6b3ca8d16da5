"""PP-YOLOE+ (and PaddleDetection's other anchor-free heads) exported without NMS (`exclude_nms`), through
paddle2onnx: inputs `image` and `scale_factor`, outputs boxes (B, N, 4) of x1, y1, x2, y2 already divided by the
scale factor, so in the original image's pixels, and class scores (B, C, N), channels before rows, their sigmoid
applied. NMS follows, class by class.

The recipe is read from `infer_cfg.yml` beside the file when it is there; else PP-YOLOE+'s, said as assumed:
each axis resized to the input with OpenCV's cubic filter on the 8-bit RGB image, divided by 255."""
from __future__ import annotations

from pipelines.boxes.conversions import xyxy_to_xywh
from pipelines.exported.decoding import with_objectness
from pipelines.exported.inspection import ExportedFile
from pipelines.exported.layouts.contract import SIGNED, Misfit, Reading, fixed, names_fit
from pipelines.exported.layouts.paddle_nms import RECIPE, extra_inputs
from pipelines.exported.paddle_sidecar import read_infer_config

SUMMARY = ("PP-YOLOE+ through paddle2onnx, `exclude_nms`", "(B, N, 4) and (B, C, N)",
           "x1, y1, x2, y2 in original pixels; class scores (sigmoid applied)", "NMS, class by class",
           "inputs `image` and `scale_factor` (B, 2); scores with channels before rows; recipe from `infer_cfg.yml`")
NMS = True
MULTI_LABEL = True  # PaddleDetection's MultiClassNMS: class by class
BOXES = "original"
# PP-YOLOE+'s MultiClassNMS (nms_threshold 0.7, keep_top_k 300) and infer_cfg.yml's draw_threshold.
DEPLOYED = {"conf_thres": 0.5, "iou_thres": 0.7, "max_det": 300}


def read(file: ExportedFile):
    extra = extra_inputs(file)
    if isinstance(extra, Misfit):
        return extra
    outputs = file.outputs
    if len(outputs) != 2 or any(len(t.shape) != 3 for t in outputs):
        return Misfit("its outputs are boxes (B, N, 4) and class scores (B, C, N)")
    boxes = next((i for i, t in enumerate(outputs) if fixed(t.shape[2]) == 4), None)
    if boxes is None:
        return Misfit("neither output is (B, N, 4) boxes")
    rows, scores = outputs[boxes].shape[1], outputs[1 - boxes].shape
    if fixed(scores[1]) is None or (fixed(rows) and fixed(scores[2]) and rows != scores[2]):
        return Misfit(f"its scores are (B, C, N) over the boxes' N rows, not {list(scores)}")
    classes = scores[1]
    if not names_fit(file, classes):
        return Misfit(f"its metadata names {len(file.names())} classes, and its scores hold {classes}")
    sidecar = read_infer_config(file, RECIPE)
    said = sidecar.said() if sidecar else "recipe PP-YOLOE+'s (assumed: no infer_cfg.yml beside the file)"
    return Reading("ppyoloe", classes, f"inputs image and scale_factor, outputs boxes (B, N, 4) and scores "
                   f"(B, C, N); {said}", SIGNED, roles={"boxes": boxes, "scores": 1 - boxes}, extra_inputs=extra,
                   recipe=sidecar.recipe if sidecar else None,
                   recipe_from=sidecar.path.name if sidecar else "")


def raw(outputs, reading: Reading, height: int, width: int):
    boxes = outputs[reading.roles["boxes"]].float()
    return with_objectness(xyxy_to_xywh(boxes), outputs[reading.roles["scores"]].float().transpose(1, 2))
