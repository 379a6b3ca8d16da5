"""YOLOX-Nano built from its exp with seeded random weights, exported by yolox's own export tool (raw and decoded
in the graph), and its predictions by the steps of YOLOX's ONNX demo on each file.

Standalone: run by the Python of yolox's own venv (benchmarks/peers/venvs.py), never by detbench's, and imports
nothing of detbench: `<venv>/bin/python export_yolox_nano.py ARGS_JSON`, as benchmarks/peers/author_exports.py
runs it (export_common.py, beside it, says the arguments and what it prints).
"""
import math
import subprocess
import sys
from importlib.metadata import version

import cv2
import numpy as np
import onnxruntime
import torch
from export_common import Biases, Export, ExportJob, batchnorm_from_images, rows_of
from yolox.data.data_augment import preproc
from yolox.exp import get_exp
from yolox.utils import demo_postprocess, multiclass_nms

job = ExportJob()

torch.manual_seed(0)
exp = get_exp(None, "yolox-nano")
size = tuple(exp.test_size)  # (416, 416)
model = exp.get_model().eval()
head = model.head


def anchor_scores():
    out = []
    for image in job.images:
        data, _ = preproc(cv2.imread(str(job.data / image)), size)
        with torch.no_grad():
            raw = model(torch.from_numpy(data)[None])[0]  # decoded in torch: obj and classes already sigmoid
        out += (raw[:, 4:5] * raw[:, 5:]).max(1).values.tolist()
    return out


# At YOLOX's initialisation the head's features come out near zero (about 1e-6): statistics from the images.
batchnorm_from_images(model, (torch.from_numpy(preproc(cv2.imread(str(job.data / image)), size)[0])[None]
                              for image in job.images))
with torch.no_grad():
    for conv in head.reg_preds:  # boxes of a few strides (features of unit scale would give exp(-20) sizes)
        conv.weight.mul_(0.1)
        conv.bias.copy_(torch.tensor([0.0, 0.0, math.log(3.0), math.log(3.0)]))
    # With features of unit scale the initial weights already spread the logits over several units; more (x5
    # was tried) saturates half the kept scores at 1.0, whose ties NMS then breaks by rounding noise.
    for conv in head.cls_preds:  # classes spread around 0.5 (YOLOX's prior bias would hold them near 0.01)
        conv.bias.zero_()
    # the score is objectness x class: the objectness bias sets how many pass (a product: a few rounds)
    job.calibrate(anchor_scores, Biases(head.obj_preds), 0.3, rounds=6)
checkpoint = job.out / "yolox_nano_spread.pth"
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
    import copy

    import onnx
    import onnxsim
    from yolox.models.network_blocks import SiLU
    from yolox.utils import replace_module

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
    file = job.out / f"{layout}.onnx"
    export(file, decode)
    session = onnxruntime.InferenceSession(str(file), providers=["CPUExecutionProvider"])

    def predict(cut, session=session, decode=decode):
        out = {}
        for image in job.images:
            original = cv2.imread(str(job.data / image))
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
    job.save(Export(layout, file, "YOLOX-Nano, seeded random weights, BN statistics from the images, box sizes of a "
                    "few strides, class bias 0, objectness bias set", 0.3, "YOLOX demo/ONNXRuntime/onnx_inference.py's "
                    "steps on the file (preproc, demo_postprocess, multiclass_nms nms 0.45)",
                    DECODED_RECIPE if decode else RAW_RECIPE, versions, SETS[decode]), predict)
