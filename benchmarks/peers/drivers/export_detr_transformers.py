"""A Hugging Face DETR (timm resnet18 backbone, 2+2 layers) built from its config with seeded random weights,
exported by optimum, and its predictions through transformers' own processor and post-processing.

Standalone: run by the Python of transformers' own venv (benchmarks/peers/venvs.py), never by detbench's, and
imports nothing of detbench: `<venv>/bin/python export_detr_transformers.py ARGS_JSON`, as
benchmarks/peers/author_exports.py runs it (export_common.py, beside it, says the arguments and what it prints).
"""
from importlib.metadata import version

import torch
from export_common import Export, ExportJob, rows_of
from optimum.exporters.onnx import main_export
from PIL import Image
from transformers import DetrConfig, DetrForObjectDetection, DetrImageProcessor

job = ExportJob()

torch.manual_seed(0)
labels = {i: f"class{i}" for i in range(91)}
config = DetrConfig(use_timm_backbone=True, backbone="resnet18", use_pretrained_backbone=False, num_queries=100,
                    encoder_layers=2, decoder_layers=2, id2label=labels, label2id={v: k for k, v in labels.items()})
model = DetrForObjectDetection(config).eval()
# A fixed height and width (a stretch, as RT-DETR's and many fine-tuned DETRs' processors say), 320 for the CPU.
# DETR's own default (shortest edge 800, longest at most 1333, aspect kept) gives each image its own input size,
# which detbench's recipes do not have: that resize is not compared here.
processor = DetrImageProcessor(size={"height": 320, "width": 320})
source = job.out / "detr-resnet18-source"


def run(path, cut):
    image = Image.open(path).convert("RGB")
    inputs = processor(images=image, return_tensors="pt")
    with torch.no_grad():
        outputs = model(**inputs)
    return processor.post_process_object_detection(outputs, threshold=cut, target_sizes=[image.size[::-1]])[0]


head = model.class_labels_classifier
with torch.no_grad():
    head.weight.mul_(10.0)  # the spread: a few queries per image far from the others
    for _ in range(4):  # the no-object logit sets how many queries pass the cut (softmax: not exact in one step)
        scores = [s for i in job.images for s in run(job.data / i, 0.0)["scores"].tolist()]
        head.bias[-1] -= job.bias_shift(scores, 0.5)
model.save_pretrained(source)
processor.save_pretrained(source)
main_export(str(source), output=str(job.out / "detr-resnet18"), task="object-detection", no_post_process=False)
file = job.out / "detr-resnet18" / "model.onnx"
versions = (f"transformers {version('transformers')}, optimum {version('optimum')}, optimum-onnx "
            f"{version('optimum-onnx')}, timm {version('timm')}, torch {torch.__version__}")


def predict(cut):
    out = {}
    for image in job.images:
        found = run(job.data / image, cut)
        out[image] = rows_of(found["boxes"].tolist(), found["scores"].tolist(), found["labels"].tolist())
    return out


RECIPE = """
Hugging Face DETR (DetrForObjectDetection, timm resnet18 backbone, 2+2 layers, 100 queries, 91 labels),
exported by optimum's `main_export(model_dir, task="object-detection")`; `preprocessor_config.json` and
`config.json` are written beside model.onnx (the processor's recipe and id2label).
- Preprocess, DetrImageProcessor (as saved beside the file): PIL/np RGB; resize to size["height"] x
  size["width"] where the size says so (this export), else so the SHORTEST edge is size["shortest_edge"]
  unless the longest would exceed size["longest_edge"] (aspect kept); no padding for one image (pixel_mask all
  ones; batches pad bottom-right with zeros); PIL bilinear (resample 2) on the 8-bit image; rescale 1/255;
  normalize ImageNet mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225); float32 NCHW. Dynamic height and
  width in the file. The defaults are shortest_edge 800, longest_edge 1333; this export's processor says height
  320, width 320 (a stretch).
- Outputs: `logits` [B, Q, num_labels + 1] raw (the last slot is "no object"), `pred_boxes` [B, Q, 4] normalised
  cx, cy, w, h (of the unpadded input, i.e. of the original image).
- Decode, post_process_object_detection(threshold=0.5 default): softmax over all num_labels + 1 slots, drop
  the last (no-object), max over classes per query (one class per query), keep score > threshold; boxes
  cxcywh -> xyxy times (w, h, w, h) of target_sizes (the original image). No top-k beyond the Q queries, no NMS.
"""
job.save(Export("detr-resnet18", file, "HF DETR (resnet18 timm backbone, 2+2 layers), seeded random weights, class "
                "head x10, no-object bias set", 0.5, "transformers DetrImageProcessor + DetrForObjectDetection (torch) "
                "+ post_process_object_detection", RECIPE, versions, ("preprocess.img_size=320",)), predict)
