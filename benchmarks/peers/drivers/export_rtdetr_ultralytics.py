"""Ultralytics' RT-DETR-L built from its config with seeded random weights, exported by Ultralytics, and its
predictions through Ultralytics' own predict on the exported file.

Standalone: run by the Python of Ultralytics' own venv (benchmarks/peers/venvs.py), never by detbench's, and
imports nothing of detbench: `<venv>/bin/python export_rtdetr_ultralytics.py ARGS_JSON`, as
benchmarks/peers/author_exports.py runs it (export_common.py, beside it, says the arguments and what it prints).
"""
from pathlib import Path

import torch
import ultralytics
from export_common import Export, ExportJob, rows_of
from ultralytics import RTDETR

job = ExportJob()
torch.manual_seed(0)
model = RTDETR("rtdetr-l.yaml")  # built from the config, random weights
head = model.model.model[-1]
paths = [str(job.data / i) for i in job.images]


def candidate_scores():
    # Ultralytics keeps the predictor of its first call, which holds a model of its own: a new one each time sees
    # the bias as calibrated so far (otherwise every round measures the first round's scores).
    model.predictor = None
    return [s for r in model.predict(paths, imgsz=320, conf=0.0, verbose=False) for s in r.boxes.conf.tolist()]


with torch.no_grad():
    head.dec_score_head[-1].weight.mul_(10.0)  # the spread: class logits vary widely per query and image
    job.calibrate(candidate_scores, head.dec_score_head[-1].bias, 0.25)
file = model.export(format="onnx", imgsz=320)
versions = f"ultralytics {ultralytics.__version__}, torch {torch.__version__}"


def predict(cut):
    reader = RTDETR(str(job.out / "rtdetr-l" / Path(file).name))  # the exported file, through Ultralytics' predict
    out = {}
    for image in job.images:
        result = reader.predict(str(job.data / image), imgsz=320, conf=cut, verbose=False)[0]
        out[image] = rows_of(result.boxes.xyxy.tolist(), result.boxes.conf.tolist(), result.boxes.cls.tolist())
    return out


RECIPE = """
Ultralytics `RTDETR(file).predict(source, imgsz=320, conf=...)` (RTDETRPredictor; default conf 0.25, max_det 300).
- Preprocess: `LetterBox(scale_fill=True)`: a stretch of the 8-bit BGR image to 320x320 (no padding, aspect not
  kept), `cv2.resize` INTER_LINEAR; then BGR -> RGB, float32, / 255; no mean/std. One input, `images`.
- Output `[B, 300, 6]`: cx, cy, w, h normalised to 0-1 (of the stretched input, so of the original image), score,
  class index (float). The graph already applied sigmoid to the class logits and took the top 300 over
  (query x class) pairs (`torch.topk` of the flattened scores; a query can appear with two classes), sorted by
  score. No background class.
- Decode: keep score > conf, first max_det; xywh -> xyxy; x * original width, y * original height. No NMS.
- Metadata: Ultralytics' usual keys (`task` detect, `imgsz`, `names`, `stride`, `args`, ...); see above.
"""
job.save(Export("rtdetr-l", Path(file), "RT-DETR-L (rtdetr-l.yaml), seeded random weights, class head x10 and biased",
                0.25, "Ultralytics RTDETR(file.onnx).predict, imgsz 320, ONNX Runtime", RECIPE, versions), predict)
