"""YOLO-NAS S built from its recipe with seeded random weights, exported by super-gradients' own exporter (raw,
and with its preprocessing and NMS inside in both output formats), and its predictions through super-gradients'
own predict.

Standalone: run by the Python of super-gradients' own venv (benchmarks/peers/venvs.py), never by detbench's, and
imports nothing of detbench: `<venv>/bin/python export_yolonas_s.py ARGS_JSON`, as
benchmarks/peers/author_exports.py runs it (export_common.py, beside it, says the arguments and what it prints).
"""
import json
import sys
from importlib.metadata import version

import cv2
import numpy as np
import torch
from export_common import Biases, Export, ExportJob, batchnorm_from_images, rows_of
from super_gradients.conversion import DetectionOutputFormatMode, ExportTargetBackend
from super_gradients.training import models
from super_gradients.training.processing.processing import (ComposeProcessing, DetectionCenterPadding,
                                                              DetectionLongestMaxSizeRescale, ImagePermute,
                                                              StandardizeImage,
                                                              default_yolo_nas_coco_processing_params)

job = ExportJob()

SIDE = 320  # COCO's processing at half its 640 for a shared 2-core CPU: the long side to 316, centred in 320
torch.manual_seed(0)
model = models.get("yolo_nas_s", num_classes=80)  # built from its recipe; no checkpoint
params = default_yolo_nas_coco_processing_params()  # 636 in 640, grey 114, RGB / 255
params["image_processor"] = ComposeProcessing([DetectionLongestMaxSizeRescale(output_shape=(SIDE - 4, SIDE - 4)),
                                               DetectionCenterPadding(output_shape=(SIDE, SIDE), pad_value=114),
                                               StandardizeImage(max_value=255.0), ImagePermute(permutation=(2, 0, 1))])
model.set_dataset_processing_params(**params)
model.eval()


def inputs(image):  # for calibration only: the predict's letterbox, near enough
    rgb = cv2.imread(str(job.data / image))[..., ::-1]
    h, w = rgb.shape[:2]
    r = (SIDE - 4) / max(h, w)
    small = cv2.resize(rgb, (round(w * r), round(h * r)))
    canvas = np.full((SIDE, SIDE, 3), 114, np.uint8)
    top, left = (SIDE - small.shape[0]) // 2, (SIDE - small.shape[1]) // 2
    canvas[top:top + small.shape[0], left:left + small.shape[1]] = small
    return torch.from_numpy(canvas.transpose(2, 0, 1).copy()).float()[None] / 255


batchnorm_from_images(model, (inputs(image) for image in job.images))  # the head's features near zero otherwise


heads = [getattr(model.heads, f"head{i}") for i in (1, 2, 3)]


def candidate_scores():
    out = []
    with torch.no_grad():
        for image in job.images:
            scores = model(inputs(image))[0][1][0]  # decoded: (boxes (B, N, 4), scores (B, N, C)), sigmoid applied
            out += scores.max(-1).values.tolist()
    return out


with torch.no_grad():
    for head in heads:  # the spread: class scores vary widely from cell to cell
        head.cls_pred.weight.mul_(5.0)
    job.calibrate(candidate_scores, Biases([h.cls_pred for h in heads]), 0.25, rounds=3)
versions = f"super-gradients {version('super-gradients')}, torch {torch.__version__}"


def predict(cut):
    out = {}
    for image in job.images:
        found = model.predict(str(job.data / image), iou=0.7, conf=cut, fuse_model=False).prediction
        out[image] = rows_of(found.bboxes_xyxy.tolist(), found.confidence.tolist(), found.labels.tolist())
    return out


RECIPE = """
YOLO-NAS S (`models.get("yolo_nas_s", num_classes=80)`, no checkpoint) with super-gradients' COCO processing
params (`default_yolo_nas_coco_processing_params()`) at half size: the long side to 316, centred in 320 (the
COCO params say 636 in 640), exported by `model.export(...)` (its own exporter: ONNX, onnxsim), input 320x320.
- Predict, `model.predict(path, iou=0.7, conf=0.25)` (the torch model; defaults of the processing params):
  the image read as RGB (PIL), `DetectionLongestMaxSizeRescale((316, 316))`: the long side to 316, cv2.resize
  linear on the 8-bit image; `DetectionCenterPadding((320, 320), 114)`: centred, grey 114 all round;
  `StandardizeImage(255)`: / 255; no channel reversal, no mean/std.
- Decode: boxes x1, y1, x2, y2 in input pixels, class scores already sigmoid; the best 1000 candidates before
  NMS; NMS class by class with multi_label_per_box (a box may stand under several classes), IoU 0.7; at most
  300 per image; boxes back by the padding's offset and the ratio.
- Exports: postprocessing=False (outputs `pre_nms_bboxes_xyxy` [B, 1000, 4], `pre_nms_scores` [B, 1000, C];
  float input, preprocessing=False); and with preprocessing and NMS inside (uint8 RGB input at 320x320, the
  graph divides by 255; the image is letterboxed outside), output formats flat ([K, 7]: image index, x1, y1,
  x2, y2, score, class) and batch (num_predictions, pred_boxes, pred_scores, pred_classes). Their score
  threshold is exported at 0.05, the lower cut (the graph's own cut is fixed at export).
"""
EXPORTS = {
    "yolonas-s": dict(preprocessing=False, postprocessing=False),
    "yolonas-s-flat": dict(preprocessing=True, postprocessing=True, confidence_threshold=job.low_cut,
                           nms_threshold=0.7, output_predictions_format=DetectionOutputFormatMode.FLAT_FORMAT),
    "yolonas-s-batch": dict(preprocessing=True, postprocessing=True, confidence_threshold=job.low_cut,
                            nms_threshold=0.7, output_predictions_format=DetectionOutputFormatMode.BATCH_FORMAT),
}
# torch >= 2.9 exports with dynamo by default, which super-gradients 3.7.1 predates (its call fails in dynamo's ONNX
# conversion) and does not let a caller choose: its call goes to torch's legacy exporter, as in its day.
torch_export = torch.onnx.export
torch.onnx.export = lambda *args, **kwargs: torch_export(*args, **{"dynamo": False, **kwargs})
expected = None
for layout, options in EXPORTS.items():
    file = job.out / f"{layout}.onnx"
    try:
        model.export(str(file), engine=ExportTargetBackend.ONNXRUNTIME, input_image_shape=(SIDE, SIDE), **options)
    except Exception as error:
        print(f"{layout}: export failed: {type(error).__name__}: {str(error)[:300]}", file=sys.stderr, flush=True)
        continue
    job.save(Export(layout, file, "YOLO-NAS S, seeded random weights, BN statistics from the images, class convs x5 "
                    "and biased", 0.25, "super-gradients model.predict (torch model, the file's source)", RECIPE,
                    versions), predict if expected is None else (lambda cut, done=expected: done[cut]))
    if expected is None:  # the predict is the same for every export of the model: run once, reused
        done = json.loads((job.out / layout / "expected.json").read_text())
        expected = {p["conf"]: p["images"] for k, p in done.items() if k.endswith("_predictions")}
