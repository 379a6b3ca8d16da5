"""PaddleDetection detectors (PP-PicoDet, PP-YOLOE+, ...) exported with `multiclass_nms3` in the graph, through
paddle2onnx: inputs `image` and `scale_factor` (each image's resize, y then x; some graphs also take `im_shape`),
outputs the detections (N, 6) of class, score, x1, y1, x2, y2 in the original image's pixels (the graph divides
by the scale factor), every image's in turn, and each image's count (B,). An image without detections may get one
row of class -1, which is no detection.

The recipe is read from `infer_cfg.yml` beside the file when it is there; else PP-YOLOE+'s, said as assumed:
each axis resized to the input with OpenCV's cubic filter on the 8-bit RGB image, divided by 255."""
from __future__ import annotations

import torch

from pipelines.exported.decoding import padded, rows
from pipelines.exported.inspection import ExportedFile, Tensor
from pipelines.exported.layouts.contract import SIGNED, Misfit, Reading, fixed
from pipelines.exported.paddle_sidecar import read_infer_config
from pipelines.exported.recipe import Recipe

SUMMARY = ("PaddleDetection through paddle2onnx, `multiclass_nms3` in the graph (PP-PicoDet, PP-YOLOE+)",
           "(N, 6) and a count (B,)", "class, score, x1, y1, x2, y2 in original pixels", "the score cut only",
           "inputs `image` and `scale_factor` (B, 2); outputs (N, 6) and (B,); recipe from `infer_cfg.yml`")
RECIPE = Recipe(resize="stretch", interpolation="cubic")  # PP-YOLOE+'s infer_cfg.yml: Resize interp 2, is_scale
NMS = False
BOXES = "original"
CLASSES = 80  # its COCO models', where neither the file nor infer_cfg.yml names the classes
DEPLOYED = {"conf_thres": 0.5}  # infer_cfg.yml's draw_threshold, the cut its deploy/python/infer.py shows
FILLERS = {"scale_factor": "scale_yx", "im_shape": "input_hw"}


def extra_inputs(file: ExportedFile) -> dict[str, str] | Misfit:
    """The inputs beside the image: scale_factor (B, 2), and im_shape (B, 2) where the graph takes it."""
    extra = {tensor.name: FILLERS.get(tensor.name) for tensor in file.inputs[1:]}
    if "scale_factor" not in extra or None in extra.values() or not all(_pair(t) for t in file.inputs[1:]):
        return Misfit("it takes the image, then scale_factor (and maybe im_shape), each (B, 2)")
    return extra


def _pair(tensor: Tensor) -> bool:
    return len(tensor.shape) == 2 and fixed(tensor.shape[1]) == 2


def read(file: ExportedFile):
    extra = extra_inputs(file)
    if isinstance(extra, Misfit):
        return extra
    ranks = [len(t.shape) for t in file.outputs]
    if sorted(ranks) != [1, 2] or fixed(file.outputs[ranks.index(2)].shape[1]) != 6:
        return Misfit("its outputs are the (N, 6) detections of multiclass_nms3 and a count per image")
    sidecar = read_infer_config(file, RECIPE)
    names = file.names() or (sidecar.labels if sidecar else None)
    said = sidecar.said() if sidecar else "recipe PP-YOLOE+'s (assumed: no infer_cfg.yml beside the file)"
    return Reading("paddle_nms", len(names) if names else CLASSES,
                   f"inputs image and scale_factor, outputs (N, 6) and (B,) (multiclass_nms3); {said}", SIGNED,
                   roles={"detections": ranks.index(2), "count": ranks.index(1)}, extra_inputs=extra,
                   recipe=sidecar.recipe if sidecar else None,
                   recipe_from=sidecar.path.name if sidecar else "")


def raw(outputs, reading: Reading, height: int, width: int):
    detections = outputs[reading.roles["detections"]].float()
    counts = outputs[reading.roles["count"]].long().reshape(-1).tolist()
    images = torch.split(detections[:sum(counts)], counts)
    found = padded([rows(image[:, 2:6], image[:, 1], image[:, 0]) for image in images])
    found[..., 4] = torch.where(found[..., 5] < 0, torch.full_like(found[..., 4], -1.0), found[..., 4])
    found[..., 5] = found[..., 5].clamp(min=0)
    return found
