"""The programs benchmarks/peers/author_exports.py runs inside each author's virtual environment (as `python -c`).

Each is our own calls of the author's public API: build the smallest model of the family from its config with
seeded random weights, spread its class head, export it with the author's exporter and run the author's own
predict. PRELUDE (shared helpers) runs first; a driver prints one `EXPORTED <json>` line per file it wrote.
These strings are never executed in detbench's own environment.
"""
from __future__ import annotations

PRELUDE = r'''
import json, math, os, shutil, sys
from pathlib import Path
ARGS = json.loads(sys.argv[1])
OUT, DATA, IMAGES, LOW = Path(ARGS["out"]), Path(ARGS["data"]), ARGS["images"], ARGS["low_cut"]
PER_IMAGE = 12  # the spread aims at about this many boxes per image at the author's default cut


def logit(p):
    return math.log(p / (1 - p))


def bias_shift(scores, cut, per_image=PER_IMAGE):
    """The logit shift that leaves about per_image * images scores (sigmoid, pooled over images) above cut,
    halfway between two neighbours so that no score lands on the cut."""
    ranked = sorted(scores, reverse=True)
    k = min(per_image * len(IMAGES), len(ranked) - 1)
    middle = (logit(min(max(ranked[k - 1], 1e-7), 1 - 1e-7)) + logit(min(max(ranked[k], 1e-7), 1 - 1e-7))) / 2
    return logit(cut) - middle


class Biases:  # one shift for the class convolutions of every stride
    def __init__(self, convs):
        self.convs = convs

    def add_(self, value):
        for conv in self.convs:
            conv.bias.add_(value)


def calibrate(scores_of, bias, cut, rounds=3):
    """Shifts the class head's bias until about PER_IMAGE scores per image pass cut; scores_of() -> every
    candidate's score over the images. Repeated: scores that round to 1.0 hide their logit the first time."""
    for _ in range(rounds):
        bias.add_(bias_shift(scores_of(), cut))


def onnx_facts(path):
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    def tensor(value):
        kind = value.type.tensor_type
        return {"name": value.name, "shape": [d.dim_param or d.dim_value for d in kind.shape.dim],
                "dtype": onnx.TensorProto.DataType.Name(kind.elem_type).lower()}
    weights = {i.name for i in model.graph.initializer}
    return {"inputs": [tensor(v) for v in model.graph.input if v.name not in weights],
            "outputs": [tensor(v) for v in model.graph.output],
            "metadata": {p.key: p.value for p in model.metadata_props},
            "opset": {o.domain or "ai.onnx": o.version for o in model.opset_import},
            "operators": sorted({n.op_type for n in model.graph.node}),
            "producer": f"{model.producer_name} {model.producer_version}"}


def rows_of(boxes, scores, labels):
    """[class, score, x1, y1, x2, y2] rows, rounded as in shared/data/ultra/expected.json."""
    return [[int(c), round(float(s), 5), *(round(float(v), 2) for v in b)] for b, s, c in zip(boxes, scores, labels)]


def save(layout, file, model, default_cut, predict, how, recipe, versions, sets=()):
    """Writes expected.json and FACTS.md beside the file (moved into OUT/layout/) and announces it.
    predict(cut) -> {image: rows} is the author's own predict; sets: the detbench keys a user must give for this
    file because the file does not say them (`model.head=...`)."""
    folder = OUT / layout
    folder.mkdir(parents=True, exist_ok=True)
    file = Path(file)
    if file.parent.resolve() != folder.resolve():
        target = folder / file.name
        if target.exists():
            target.unlink() if target.is_file() else shutil.rmtree(target)
        shutil.move(str(file), target)
        data = Path(str(file) + ".data")
        if data.exists():
            shutil.move(str(data), folder / data.name)
        file = target
    predictions = {}
    for key, cut in (("default_predictions", default_cut), ("low_predictions", LOW)):
        found = predict(cut)
        predictions[key] = {"how": how, "conf": cut, "images": found,
                            "count": sum(len(r) for r in found.values()),
                            "per_image": [len(found.get(i, [])) for i in IMAGES]}
    expected = {"model": model, "file": file.name, "paths": "relative to shared/data/",
                "row": "[class_id, score, x1, y1, x2, y2] in the original image's pixels", "versions": versions,
                **predictions}
    (folder / "expected.json").write_text(json.dumps(expected, indent=1))
    facts = onnx_facts(file) if file.suffix == ".onnx" else {}
    lines = [f"# {layout}: {model}", "", f"Exported file: `{file}`", f"Versions: {versions}", ""]
    if facts:
        lines += ["## The file", f"- producer {facts['producer']}; opsets {facts['opset']}"]
        lines += [f"- input `{t['name']}` {t['shape']} {t['dtype']}" for t in facts["inputs"]]
        lines += [f"- output `{t['name']}` {t['shape']} {t['dtype']}" for t in facts["outputs"]]
        lines += [f"- metadata_props: {json.dumps(facts['metadata']) if facts['metadata'] else 'none'}"]
        lines += [f"- operators: {', '.join(facts['operators'])}", ""]
    lines += ["## The author's predict", recipe.strip(), "",
              f"## expected.json", f"- how: {how}",
              *(f"- {key}: conf {p['conf']}, {p['count']} boxes, per image {p['per_image']}"
                for key, p in predictions.items()), ""]
    (folder / "FACTS.md").write_text("\n".join(lines))
    print("EXPORTED " + json.dumps({"layout": layout, "file": str(file), "expected": str(folder / "expected.json"),
                                    "facts": str(folder / "FACTS.md"), "sets": list(sets)}), flush=True)
'''

ULTRALYTICS = r'''
import numpy as np
import torch
import ultralytics
from ultralytics import RTDETR

torch.manual_seed(0)
model = RTDETR("rtdetr-l.yaml")  # built from the config, random weights
head = model.model.model[-1]
paths = [str(DATA / i) for i in IMAGES]
with torch.no_grad():
    head.dec_score_head[-1].weight.mul_(10.0)  # the spread: class logits vary widely per query and image
    calibrate(lambda: [s for r in model.predict(paths, imgsz=320, conf=0.0, verbose=False) for s in r.boxes.conf.tolist()],
              head.dec_score_head[-1].bias, 0.25)
file = model.export(format="onnx", imgsz=320)
versions = f"ultralytics {ultralytics.__version__}, torch {torch.__version__}"


def predict(cut):
    reader = RTDETR(str(OUT / "rtdetr-l" / Path(file).name))  # the exported file, through Ultralytics' predict
    out = {}
    for image in IMAGES:
        result = reader.predict(str(DATA / image), imgsz=320, conf=cut, verbose=False)[0]
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
save("rtdetr-l", file, "RT-DETR-L (rtdetr-l.yaml), seeded random weights, class head x10 and biased", 0.25,
     predict, "Ultralytics RTDETR(file.onnx).predict, imgsz 320, ONNX Runtime", RECIPE, versions)
'''

RFDETR = r'''
import torch
import rfdetr
from importlib.metadata import version
from rfdetr import RFDETRNano

torch.manual_seed(0)
model = RFDETRNano(pretrain_weights=None)  # built from its config; no checkpoint
detr = model.model.model
paths = [str(DATA / i) for i in IMAGES]
with torch.no_grad():
    detr.class_embed.weight.mul_(10.0)  # the spread: class logits vary widely per query and image
    calibrate(lambda: [s for d in model.predict(paths, threshold=0.0) for s in d.confidence.tolist()],
              detr.class_embed.bias, 0.5)
file = model.export(output_dir=str(OUT / "rfdetr-nano"), verbose=False)
versions = f"rfdetr {version('rfdetr')}, torch {torch.__version__}"


def predict(cut):
    out = {}
    for image in IMAGES:
        d = model.predict(str(DATA / image), threshold=cut)
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
save("rfdetr-nano", file, "RF-DETR Nano (RFDETRNano(pretrain_weights=None)), seeded random weights, class head x10 "
     "and biased", 0.5, predict, "rfdetr RFDETRNano.predict (torch model, the file's source)", RECIPE, versions)
'''

DFINE = r'''
import sys
from importlib.metadata import version
import torch
import torchvision.transforms as T
from PIL import Image

# d-fine-project installs the repository's src/ folders (core, zoo, ...) as top-level packages, whose relative
# imports (`from ...core import register`) need their parent package: a folder of links gives them one.
site = Path(torch.__file__).parent.parent
shim = OUT / "shim" / "dfine_src"
shim.mkdir(parents=True, exist_ok=True)
for name in ("__init__.py", "core", "data", "misc", "nn", "optim", "solver", "zoo"):
    if not (shim / name).exists():
        (shim / name).symlink_to(site / name)
sys.path.insert(0, str(OUT / "shim"))
from dfine_src.core import YAMLConfig

# configs/dfine/dfine_hgnetv2_n_coco.yml with its includes merged (the package ships no configs)
CONFIG = """
task: detection
model: DFINE
postprocessor: DFINEPostProcessor
use_focal_loss: True
eval_spatial_size: [640, 640]
num_classes: 80
remap_mscoco_category: True
DFINE: {backbone: HGNetv2, encoder: HybridEncoder, decoder: DFINETransformer}
HGNetv2: {name: 'B0', return_idx: [2, 3], freeze_at: -1, freeze_norm: False, use_lab: True, pretrained: False}
HybridEncoder: {in_channels: [512, 1024], feat_strides: [16, 32], hidden_dim: 128, use_encoder_idx: [1],
  num_encoder_layers: 1, nhead: 8, dim_feedforward: 512, dropout: 0., enc_act: 'gelu', expansion: 0.34,
  depth_mult: 0.5, act: 'silu'}
DFINETransformer: {feat_channels: [128, 128], feat_strides: [16, 32], hidden_dim: 128, dim_feedforward: 512,
  num_levels: 2, num_layers: 3, eval_idx: -1, num_queries: 300, num_denoising: 100, label_noise_ratio: 0.5,
  box_noise_scale: 1.0, reg_max: 32, reg_scale: 4, layer_scale: 1, num_points: [6, 6],
  cross_attn_method: default, query_select_method: default}
DFINEPostProcessor: {num_top_queries: 300}
"""
(OUT / "dfine_hgnetv2_n.yml").write_text(CONFIG)
torch.manual_seed(0)
cfg = YAMLConfig(str(OUT / "dfine_hgnetv2_n.yml"))


class Model(torch.nn.Module):  # what tools/deployment/export_onnx.py exports: model and postprocessor, deployed
    def __init__(self):
        super().__init__()
        self.model = cfg.model.deploy()
        self.postprocessor = cfg.postprocessor.deploy()

    def forward(self, images, orig_target_sizes):
        return self.postprocessor(self.model(images), orig_target_sizes)


model = Model().eval()


def torch_inf(path):  # tools/inference/torch_inf.py's recipe
    image = Image.open(path).convert("RGB")
    w, h = image.size
    data = T.Compose([T.Resize((640, 640)), T.ToTensor()])(image).unsqueeze(0)
    with torch.no_grad():
        labels, boxes, scores = model(data, torch.tensor([[w, h]]))
    return labels[0], boxes[0], scores[0]


score_head = model.model.decoder.dec_score_head[-1]
with torch.no_grad():
    score_head.weight.mul_(10.0)  # the spread: class logits vary widely per query and image
    calibrate(lambda: [s for i in IMAGES for s in torch_inf(DATA / i)[2].tolist()], score_head.bias, 0.4)

file = OUT / "dfine_n.onnx"
data, size = torch.rand(32, 3, 640, 640), torch.tensor([[640, 640]])
with torch.no_grad():
    model(data, size)
dynamic_axes = {"images": {0: "N"}, "orig_target_sizes": {0: "N"}}
exporter = "torch.onnx.export as the script calls it (torch's default exporter)"
try:
    torch.onnx.export(model, (data, size), str(file), input_names=["images", "orig_target_sizes"],
                      output_names=["labels", "boxes", "scores"], dynamic_axes=dynamic_axes, opset_version=16,
                      verbose=False, do_constant_folding=True)
except Exception as error:  # torch >= 2.9 defaults to the dynamo exporter, which the script predates
    print(f"default exporter failed ({type(error).__name__}: {str(error)[:200]}); dynamo=False", file=sys.stderr)
    exporter = "torch.onnx.export(..., dynamo=False): the default (dynamo) exporter failed"
    torch.onnx.export(model, (data, size), str(file), input_names=["images", "orig_target_sizes"],
                      output_names=["labels", "boxes", "scores"], dynamic_axes=dynamic_axes, opset_version=16,
                      verbose=False, do_constant_folding=True, dynamo=False)
import onnx, onnxsim
simplified, check = onnxsim.simplify(str(file), test_input_shapes={"images": data.shape,
                                                                   "orig_target_sizes": size.shape})
onnx.save(simplified, str(file))
Path(str(file) + ".data").unlink(missing_ok=True)  # the exporter's external weights, now inside the file
versions = (f"d-fine-project {version('d-fine-project')}, torch {torch.__version__}, onnxsim {version('onnxsim')}; "
            f"{exporter}; onnxsim check {check}")


def predict(cut):
    out = {}
    for image in IMAGES:
        labels, boxes, scores = torch_inf(DATA / image)
        keep = scores > cut
        out[image] = rows_of(boxes[keep].tolist(), scores[keep].tolist(), labels[keep].tolist())
    return out


RECIPE = """
D-FINE-N (configs/dfine/dfine_hgnetv2_n_coco.yml), exported as tools/deployment/export_onnx.py does: a module
whose forward(images, orig_target_sizes) is `postprocessor(model(images), orig_target_sizes)` after
`cfg.model.deploy()` / `cfg.postprocessor.deploy()`; traced on rand(32, 3, 640, 640) and [[640, 640]];
input_names images, orig_target_sizes; output_names labels, boxes, scores; dynamic axis 0 ("N") on both
inputs; opset 16; then onnxsim. The trained input size is fixed at eval_spatial_size 640x640.
- Predict, tools/inference/torch_inf.py (the torch model): PIL RGB; `T.Resize((640, 640))` on the PIL image (a
  stretch, PIL bilinear, which antialiases when shrinking, on the 8-bit image), `T.ToTensor()` (/255, float32,
  RGB); NO mean/std. orig_target_sizes = [[w, h]] of the ORIGINAL image (int64). Drawn at score > 0.4.
- tools/inference/onnx_inf.py (the ONNX file) does otherwise: letterbox CENTRED with black (0) padding, PIL
  bilinear to fit 640, orig_target_sizes = [[640, 640]], then boxes minus the padding, divided by the ratio;
  threshold 0.4. expected.json follows torch_inf.py (the stretch the model was trained on).
- Graph decode (DFINEPostProcessor, use_focal_loss): sigmoid of the logits, top 300 over the flattened
  (query x class) pairs (torch.topk), label = index mod 80 (0-based COCO-80 order; no background class;
  the remap to COCO ids happens only outside deploy mode), boxes cxcywh -> xyxy times (w, h, w, h) of
  orig_target_sizes: x1, y1, x2, y2 in original pixels, not clamped. Outputs labels int64 [N, 300],
  boxes float [N, 300, 4], scores float [N, 300]. No NMS.
"""
save("dfine-n", file, "D-FINE-N (dfine_hgnetv2_n), seeded random weights, class head x10 and biased", 0.4,
     predict, "D-FINE tools/inference/torch_inf.py's recipe on the torch model the file was exported from",
     RECIPE, versions)
'''

HF_DETR = r'''
from importlib.metadata import version
import torch
from PIL import Image
from transformers import DetrConfig, DetrForObjectDetection, DetrImageProcessor
from optimum.exporters.onnx import main_export

torch.manual_seed(0)
labels = {i: f"class{i}" for i in range(91)}
config = DetrConfig(use_timm_backbone=True, backbone="resnet18", use_pretrained_backbone=False, num_queries=100,
                    encoder_layers=2, decoder_layers=2, id2label=labels, label2id={v: k for k, v in labels.items()})
model = DetrForObjectDetection(config).eval()
# A fixed height and width (a stretch, as RT-DETR's and many fine-tuned DETRs' processors say), 320 for the CPU.
# DETR's own default (shortest edge 800, longest at most 1333, aspect kept) gives each image its own input size,
# which detbench's recipes do not have: that resize is not compared here.
processor = DetrImageProcessor(size={"height": 320, "width": 320})
source = OUT / "detr-resnet18-source"


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
        scores = [s for i in IMAGES for s in run(DATA / i, 0.0)["scores"].tolist()]
        head.bias[-1] -= bias_shift(scores, 0.5)
model.save_pretrained(source)
processor.save_pretrained(source)
main_export(str(source), output=str(OUT / "detr-resnet18"), task="object-detection", no_post_process=False)
file = OUT / "detr-resnet18" / "model.onnx"
versions = (f"transformers {version('transformers')}, optimum {version('optimum')}, optimum-onnx "
            f"{version('optimum-onnx')}, timm {version('timm')}, torch {torch.__version__}")


def predict(cut):
    out = {}
    for image in IMAGES:
        found = run(DATA / image, cut)
        out[image] = rows_of(found["boxes"].tolist(), found["scores"].tolist(), found["labels"].tolist())
    return out


RECIPE = """
Hugging Face DETR (DetrForObjectDetection, timm resnet18 backbone, 2+2 layers, 100 queries, 91 labels),
exported by optimum's `main_export(model_dir, task="object-detection")`; `preprocessor_config.json` and
`config.json` are written beside model.onnx (the processor's recipe and id2label).
- Preprocess, DetrImageProcessor (as saved beside the file): PIL/np RGB; resize to size["height"] x
  size["width"] where the size says so (this export), else so the SHORTEST edge is size["shortest_edge"]
  unless the longest would exceed size["longest_edge"] (aspect kept); no padding for one image (pixel_mask all ones; batches pad bottom-right with zeros); PIL
  bilinear (resample 2) on the 8-bit image; rescale 1/255; normalize ImageNet mean (0.485, 0.456, 0.406),
  std (0.229, 0.224, 0.225); float32 NCHW. Dynamic height and width in the file. The defaults are
  shortest_edge 800, longest_edge 1333; this export's processor says height 320, width 320 (a stretch).
- Outputs: `logits` [B, Q, num_labels + 1] raw (the last slot is "no object"), `pred_boxes` [B, Q, 4] normalised
  cx, cy, w, h (of the unpadded input, i.e. of the original image).
- Decode, post_process_object_detection(threshold=0.5 default): softmax over all num_labels + 1 slots, drop
  the last (no-object), max over classes per query (one class per query), keep score > threshold; boxes
  cxcywh -> xyxy times (w, h, w, h) of target_sizes (the original image). No top-k beyond the Q queries, no NMS.
"""
save("detr-resnet18", file, "HF DETR (resnet18 timm backbone, 2+2 layers), seeded random weights, class head x10, "
     "no-object bias set", 0.5, predict, "transformers DetrImageProcessor + DetrForObjectDetection (torch) + "
     "post_process_object_detection", RECIPE, versions, ["preprocess.img_size=320"])
'''

YOLOX = r'''
import subprocess
from importlib.metadata import version
import cv2
import numpy as np
import onnxruntime
import torch
from yolox.exp import get_exp
from yolox.data.data_augment import preproc
from yolox.utils import demo_postprocess, multiclass_nms

torch.manual_seed(0)
exp = get_exp(None, "yolox-nano")
size = tuple(exp.test_size)  # (416, 416)
model = exp.get_model().eval()
head = model.head


def anchor_scores():
    out = []
    for image in IMAGES:
        data, _ = preproc(cv2.imread(str(DATA / image)), size)
        with torch.no_grad():
            raw = model(torch.from_numpy(data)[None])[0]  # decoded in torch: obj and classes already sigmoid
        out += (raw[:, 4:5] * raw[:, 5:]).max(1).values.tolist()
    return out


# At YOLOX's initialisation the head's features come out near zero (about 1e-6): every anchor would score its
# prior bias alone. Batch-norm statistics taken from the images (every BN in train mode, cumulative average,
# the rest of the model in eval) give features of unit scale, so the scores follow the image.
norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
for norm in norms:
    norm.reset_running_stats()
    norm.momentum = None
    norm.train()
with torch.no_grad():
    for image in IMAGES:
        model(torch.from_numpy(preproc(cv2.imread(str(DATA / image)), size)[0])[None])
for norm in norms:
    norm.eval()
with torch.no_grad():
    for conv in head.reg_preds:  # boxes of a few strides (features of unit scale would give exp(-20) sizes)
        conv.weight.mul_(0.1)
        conv.bias.copy_(torch.tensor([0.0, 0.0, math.log(3.0), math.log(3.0)]))
    # With features of unit scale the initial weights already spread the logits over several units; more (x5
    # was tried) saturates half the kept scores at 1.0, whose ties NMS then breaks by rounding noise.
    for conv in head.cls_preds:  # classes spread around 0.5 (YOLOX's prior bias would hold them near 0.01)
        conv.bias.zero_()
    # the score is objectness x class: the objectness bias sets how many pass (a product: a few rounds)
    calibrate(anchor_scores, Biases(head.obj_preds), 0.3, rounds=6)
checkpoint = OUT / "yolox_nano_spread.pth"
torch.save({"model": model.state_dict()}, checkpoint)
notes = []


def export(file, decode):
    """yolox's own export tool (python -m yolox.tools.export_onnx); where it cannot run here, its steps."""
    command = [sys.executable, "-m", "yolox.tools.export_onnx", "-n", "yolox-nano", "-c", str(checkpoint),
               "--output-name", str(file)] + (["--decode_in_inference"] if decode else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if file.exists():
        return
    reason = [line for line in (done.stdout + done.stderr).splitlines() if "Error" in line][-1:]
    notes.append(f"yolox.tools.export_onnx wrote nothing ({' '.join(reason)[:200]}); its steps done by hand: "
                 "replace_module(nn.SiLU -> yolox SiLU), head.decode_in_inference, torch.onnx.export("
                 "dynamo=False, opset 11, input images, output output), onnxsim.simplify")
    from yolox.models.network_blocks import SiLU
    from yolox.utils import replace_module
    import copy, onnx, onnxsim
    traced = replace_module(copy.deepcopy(model), torch.nn.SiLU, SiLU).eval()
    traced.head.decode_in_inference = decode
    torch.onnx.export(traced, torch.randn(1, 3, *size), str(file), input_names=["images"], output_names=["output"],
                      opset_version=11, dynamo=False)
    simplified, check = onnxsim.simplify(onnx.load(str(file)))
    assert check
    onnx.save(simplified, str(file))


RAW_RECIPE = """
YOLOX-Nano (`get_exp(None, "yolox-nano")`, test_size 416x416, 80 classes), exported by
`python -m yolox.tools.export_onnx -n yolox-nano -c CKPT` (decode_in_inference False by default; opset 11;
input `images`, output `output`; onnxsim).
- Predict, demo/ONNXRuntime/onnx_inference.py (the repository's ONNX demo, with the package's functions):
  cv2.imread (BGR, 8-bit); `preproc(img, (416, 416))`: r = min(416 / h, 416 / w), cv2.resize to
  (int(w r), int(h r)) INTER_LINEAR on the 8-bit image, placed at the TOP-LEFT of a 416x416 canvas filled with
  114 (padding at the bottom and right), HWC -> CHW, float32 in 0-255: no /255, no mean/std, BGR kept.
  (The demo's --input_shape defaults to 640,640: it must be given 416,416 for this file.)
- Output [1, 3549, 85] (strides 8, 16, 32 at 416: 52x52 + 26x26 + 13x13 anchors, row-major per stride): cx, cy
  as offsets in grid cells, log w, log h; objectness and 80 class scores ALREADY sigmoid (in the graph).
- Decode, `demo_postprocess(output, (416, 416))`: cx = (x + grid_x) * stride, cy = (y + grid_y) * stride,
  w = exp(w) * stride, h = exp(h) * stride (input pixels); scores = obj * class (per class); xyxy; / r (no
  offset: padding is bottom-right). `multiclass_nms(boxes, scores, nms_thr=0.45, score_thr=0.1)`:
  CLASS-AGNOSTIC by default in this version (argmax class per anchor, score > 0.1, one NMS over all), then
  drawn at score_thr 0.3 (the default cut; the same boxes as score_thr 0.3 to begin with).
"""
DECODED_RECIPE = RAW_RECIPE.replace("decode_in_inference False by default", "with --decode_in_inference") + """
- With --decode_in_inference the graph does the decode itself: output [1, 3549, 85] = cx, cy, w, h in INPUT
  pixels (grid offset and exp times stride applied), objectness and class scores sigmoid; the predict is the
  same without demo_postprocess.
"""
# The file leaves its layout open (YOLO's decoded rows have its shape): the user names it.
SETS = {False: ["model.head=yolox"], True: ["model.head=yolox_decoded"]}
for layout, decode in (("yolox-nano", False), ("yolox-nano-decoded", True)):
    file = OUT / f"{layout}.onnx"
    export(file, decode)
    session = onnxruntime.InferenceSession(str(file), providers=["CPUExecutionProvider"])

    def predict(cut, session=session, decode=decode):
        out = {}
        for image in IMAGES:
            original = cv2.imread(str(DATA / image))
            data, ratio = preproc(original, size)
            output = session.run(None, {session.get_inputs()[0].name: data[None]})
            predictions = output[0][0] if decode else demo_postprocess(output[0], size)[0]
            boxes, scores = predictions[:, :4], predictions[:, 4:5] * predictions[:, 5:]
            xyxy = np.ones_like(boxes)
            xyxy[:, 0], xyxy[:, 1] = boxes[:, 0] - boxes[:, 2] / 2., boxes[:, 1] - boxes[:, 3] / 2.
            xyxy[:, 2], xyxy[:, 3] = boxes[:, 0] + boxes[:, 2] / 2., boxes[:, 1] + boxes[:, 3] / 2.
            xyxy /= ratio
            dets = multiclass_nms(xyxy, scores, nms_thr=0.45, score_thr=cut)
            dets = np.zeros((0, 6)) if dets is None else dets
            out[image] = rows_of(dets[:, :4].tolist(), dets[:, 4].tolist(), dets[:, 5].tolist())
        return out

    versions = (f"yolox {version('yolox')} (installed --no-deps: it pins onnx==1.8.1, onnxruntime==1.8.0, "
                f"onnx-simplifier==0.3.5), torch {torch.__version__}, onnxruntime {onnxruntime.__version__}; "
                + "; ".join(notes))
    save(layout, file, f"YOLOX-Nano, seeded random weights, BN statistics from the images, box sizes of a few "
         "strides, class bias 0, objectness bias set", 0.3, predict,
         "YOLOX demo/ONNXRuntime/onnx_inference.py's steps on the file (preproc, demo_postprocess, multiclass_nms "
         "nms 0.45)", DECODED_RECIPE if decode else RAW_RECIPE, versions, SETS[decode])
'''

DRIVERS = {"ultralytics": ULTRALYTICS, "rfdetr": RFDETR, "d-fine": DFINE, "transformers": HF_DETR, "yolox": YOLOX}

YOLONAS = r'''
from importlib.metadata import version
import cv2
import numpy as np
import torch
from super_gradients.training import models
from super_gradients.training.processing.processing import (ComposeProcessing, DetectionCenterPadding,
                                                              DetectionLongestMaxSizeRescale, ImagePermute,
                                                              StandardizeImage,
                                                              default_yolo_nas_coco_processing_params)
from super_gradients.conversion import DetectionOutputFormatMode, ExportTargetBackend

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
    rgb = cv2.imread(str(DATA / image))[..., ::-1]
    h, w = rgb.shape[:2]
    r = (SIDE - 4) / max(h, w)
    small = cv2.resize(rgb, (round(w * r), round(h * r)))
    canvas = np.full((SIDE, SIDE, 3), 114, np.uint8)
    top, left = (SIDE - small.shape[0]) // 2, (SIDE - small.shape[1]) // 2
    canvas[top:top + small.shape[0], left:left + small.shape[1]] = small
    return torch.from_numpy(canvas.transpose(2, 0, 1).copy()).float()[None] / 255


# At initialisation the head's features are near zero: batch-norm statistics from the images (BN layers in train
# mode, cumulative average) give them unit scale, so scores follow the image.
norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
for norm in norms:
    norm.reset_running_stats()
    norm.momentum = None
    norm.train()
with torch.no_grad():
    for image in IMAGES:
        model(inputs(image))
for norm in norms:
    norm.eval()


heads = [getattr(model.heads, f"head{i}") for i in (1, 2, 3)]


def candidate_scores():
    out = []
    with torch.no_grad():
        for image in IMAGES:
            scores = model(inputs(image))[0][1][0]  # decoded: (boxes (B, N, 4), scores (B, N, C)), sigmoid applied
            out += scores.max(-1).values.tolist()
    return out


with torch.no_grad():
    for head in heads:  # the spread: class scores vary widely from cell to cell
        head.cls_pred.weight.mul_(5.0)
    calibrate(candidate_scores, Biases([h.cls_pred for h in heads]), 0.25, rounds=3)
versions = f"super-gradients {version('super-gradients')}, torch {torch.__version__}"


def predict(cut):
    out = {}
    for image in IMAGES:
        found = model.predict(str(DATA / image), iou=0.7, conf=cut, fuse_model=False).prediction
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
    "yolonas-s-flat": dict(preprocessing=True, postprocessing=True, confidence_threshold=LOW, nms_threshold=0.7,
                           output_predictions_format=DetectionOutputFormatMode.FLAT_FORMAT),
    "yolonas-s-batch": dict(preprocessing=True, postprocessing=True, confidence_threshold=LOW, nms_threshold=0.7,
                            output_predictions_format=DetectionOutputFormatMode.BATCH_FORMAT),
}
# torch >= 2.9 exports with dynamo by default, which super-gradients 3.7.1 predates (its call fails in dynamo's ONNX
# conversion) and does not let a caller choose: its call goes to torch's legacy exporter, as in its day.
torch_export = torch.onnx.export
torch.onnx.export = lambda *args, **kwargs: torch_export(*args, **{"dynamo": False, **kwargs})
expected = None
for layout, options in EXPORTS.items():
    file = OUT / f"{layout}.onnx"
    try:
        model.export(str(file), engine=ExportTargetBackend.ONNXRUNTIME, input_image_shape=(SIDE, SIDE), **options)
    except Exception as error:
        print(f"{layout}: export failed: {type(error).__name__}: {str(error)[:300]}", file=sys.stderr, flush=True)
        continue
    save(layout, file, "YOLO-NAS S, seeded random weights, BN statistics from the images, class convs x5 and biased",
         0.25, predict if expected is None else (lambda cut, done=expected: done[cut]),
         "super-gradients model.predict (torch model, the file's source)", RECIPE, versions)
    if expected is None:  # the predict is the same for every export of the model: run once, reused
        done = json.loads((OUT / layout / "expected.json").read_text())
        expected = {p["conf"]: p["images"] for k, p in done.items() if k.endswith("_predictions")}
'''

DRIVERS["super-gradients"] = YOLONAS
