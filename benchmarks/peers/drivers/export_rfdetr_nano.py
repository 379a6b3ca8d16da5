"""rfdetr's RF-DETR Nano built from its config with seeded random weights, exported by rfdetr, and its predictions
through rfdetr's own predict (on the torch model the file was exported from).

Standalone: run by the Python of rfdetr's own venv (benchmarks/peers/venvs.py), never by detbench's, and imports
nothing of detbench: `<venv>/bin/python export_rfdetr_nano.py ARGS_JSON`, as benchmarks/peers/author_exports.py
runs it (export_common.py, beside it, says the arguments and what it prints).
"""
from importlib.metadata import version
from pathlib import Path

import torch
from export_common import Export, ExportJob, rows_of
from rfdetr import RFDETRNano

job = ExportJob()
torch.manual_seed(0)
model = RFDETRNano(pretrain_weights=None)  # built from its config; no checkpoint
detr = model.model.model
paths = [str(job.data / i) for i in job.images]
with torch.no_grad():
    detr.class_embed.weight.mul_(10.0)  # the spread: class logits vary widely per query and image
    job.calibrate(lambda: [s for d in model.predict(paths, threshold=0.0) for s in d.confidence.tolist()],
                  detr.class_embed.bias, 0.5)
file = model.export(output_dir=str(job.out / "rfdetr-nano"), verbose=False)
versions = f"rfdetr {version('rfdetr')}, torch {torch.__version__}"


def predict(cut):
    out = {}
    for image in job.images:
        d = model.predict(str(job.data / image), threshold=cut)
        out[image] = rows_of(d.xyxy.tolist(), d.confidence.tolist(), d.class_id.tolist())
    return out


RECIPE = """
rfdetr `RFDETRNano(...).predict(image, threshold=0.5)` (default threshold 0.5); it runs the torch model, not the
file; the file is `model.export()` (ONNX, opset 17, static batch 1, resolution 384 for Nano).
- Preprocess: PIL RGB image -> uint8 CHW tensor -> float32 / 255 (to_tensor), THEN
  `torchvision.transforms.functional.resize(t, [384, 384], antialias=False)` (a stretch, bilinear, in float,
  no antialias), then normalize with ImageNet mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225).
- Outputs: `dets` [B, 300, 4] normalised cx, cy, w, h; `labels` [B, 300, C] raw logits (C = num_classes + 1 = 91
  for the default config: the class ids are COCO's sparse ids 1..90 and slot 0 is never a real class for COCO
  checkpoints; a fine-tuned model's ids are 0-based).
- Decode (PostProcess): sigmoid of all logits; the top 300 over the flattened (query x class) pairs, stable sort;
  label = index % C, query = index // C; boxes cxcywh -> xyxy, times (w, h, w, h) of the original image,
  clamped to [0, w] / [0, h]; keep score > threshold. No NMS.
"""
job.save(Export("rfdetr-nano", Path(file), "RF-DETR Nano (RFDETRNano(pretrain_weights=None)), seeded random weights, "
                "class head x10 and biased", 0.5, "rfdetr RFDETRNano.predict (torch model, the file's source)", RECIPE,
                versions), predict)
