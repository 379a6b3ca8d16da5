"""D-FINE-N built from its config with seeded random weights, exported as D-FINE's tools/deployment/export_onnx.py
exports it, and its predictions by the recipe of D-FINE's tools/inference/torch_inf.py.

Standalone: run by the Python of D-FINE's own venv (benchmarks/peers/venvs.py), never by detbench's, and imports
nothing of detbench: `<venv>/bin/python export_dfine_n.py ARGS_JSON`, as benchmarks/peers/author_exports.py runs
it (export_common.py, beside it, says the arguments and what it prints).
"""
import sys
from importlib.metadata import version
from pathlib import Path

import onnx
import onnxsim
import torch
import torchvision.transforms as T
from export_common import Export, ExportJob, rows_of
from PIL import Image

job = ExportJob()

# d-fine-project installs the repository's src/ folders (core, zoo, ...) as top-level packages, whose relative
# imports (`from ...core import register`) need their parent package: a folder of links gives them one.
site = Path(torch.__file__).parent.parent
shim = job.out / "shim" / "dfine_src"
shim.mkdir(parents=True, exist_ok=True)
for name in ("__init__.py", "core", "data", "misc", "nn", "optim", "solver", "zoo"):
    if not (shim / name).exists():
        (shim / name).symlink_to(site / name)
sys.path.insert(0, str(job.out / "shim"))
from dfine_src.core import YAMLConfig  # noqa: E402  (found only through the shim above)

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
(job.out / "dfine_hgnetv2_n.yml").write_text(CONFIG)
torch.manual_seed(0)
cfg = YAMLConfig(str(job.out / "dfine_hgnetv2_n.yml"))


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
    job.calibrate(lambda: [s for i in job.images for s in torch_inf(job.data / i)[2].tolist()], score_head.bias, 0.4)

file = job.out / "dfine_n.onnx"
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
simplified, check = onnxsim.simplify(str(file), test_input_shapes={"images": data.shape,
                                                                   "orig_target_sizes": size.shape})
onnx.save(simplified, str(file))
Path(str(file) + ".data").unlink(missing_ok=True)  # the exporter's external weights, now inside the file
versions = (f"d-fine-project {version('d-fine-project')}, torch {torch.__version__}, onnxsim {version('onnxsim')}; "
            f"{exporter}; onnxsim check {check}")


def predict(cut):
    out = {}
    for image in job.images:
        labels, boxes, scores = torch_inf(job.data / image)
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
job.save(Export("dfine-n", file, "D-FINE-N (dfine_hgnetv2_n), seeded random weights, class head x10 and biased", 0.4,
                "D-FINE tools/inference/torch_inf.py's recipe on the torch model the file was exported from", RECIPE,
                versions), predict)
