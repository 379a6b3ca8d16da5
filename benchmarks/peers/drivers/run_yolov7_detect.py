"""The official YOLOv7 detect.py loop over an image list, timed step by step: the peer of
benchmarks/peers/yolov7_official_parity.py (its package's docstring, THE OFFICIAL LOOP, says every step).

Standalone: run by the Python of the official code's own venv (benchmarks/peers/yolov7_official/peer_setup.py
makes it with benchmarks/peers/venvs.py; the wheel yolov7-wky-package installed there), never by detbench's, and
imports nothing of detbench: the official code's top-level packages are also called `models` and `utils`, and here
they must be the official ones (checked before they are used).

    <venv>/bin/python run_yolov7_detect.py --weights FILE --image-list FILE --out DIR --threads N
        --warmup auto|N --repeats N --img-size N --cfg cfg/deploy/yolov7.yaml --conf-thres 0.25 --iou-thres 0.45

Writes detections.csv (image, class, score, x1, y1, x2, y2), times.json and images/ into --out. Exit status 0, or
1 when the official code is not where the venv says it is (detbench's ExitStatus.OK and FAILED); 2 for a mistake
in the arguments (argparse's).
"""
from __future__ import annotations

import argparse
import csv
import json
import resource
import statistics
import sys
import time
from importlib.metadata import distribution
from pathlib import Path
from typing import Sequence

OFFICIAL = "yolov7-wky-package"  # the distribution of the official code (yolov7_official/facts.py says its pin)
OK, FAILED = 0, 1


def official_root() -> Path | None:
    """Where the venv installed the official code, when its `models` and `utils` are the ones imported."""
    import models as official_models
    import utils as official_utils

    root = Path(distribution(OFFICIAL).locate_file("")).resolve()
    for package in (official_models, official_utils):
        location = Path(package.__file__).resolve()
        if location.parent.parent != root:
            print(f"error: {package.__name__} resolves to {location}, not to the official code in {root}",
                  file=sys.stderr)
            return None
    return root


def run_peer(args: argparse.Namespace) -> int:
    """The official detect.py steps over the image list (THE OFFICIAL LOOP)."""
    out = Path(args.out)
    import cv2
    import numpy as np
    import torch
    import yaml

    peer_dir = official_root()
    if peer_dir is None:
        return FAILED
    import models as official_models
    from models.common import Conv
    from models.yolo import Model
    from utils.datasets import letterbox
    from utils.general import non_max_suppression, scale_coords
    from utils.plots import plot_one_box

    torch.set_num_threads(args.threads)
    model = Model(str(peer_dir / args.cfg))
    state = torch.load(args.weights, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model = model.float().fuse().eval()
    for module in model.modules():  # attempt_load's compatibility updates
        if type(module) in (torch.nn.Hardswish, torch.nn.LeakyReLU, torch.nn.ReLU, torch.nn.ReLU6, torch.nn.SiLU):
            module.inplace = True
        elif type(module) is torch.nn.Upsample:
            module.recompute_scale_factor = None
        elif type(module) is Conv:
            module._non_persistent_buffers_set = set()
    stride = int(model.stride.max())
    names = yaml.safe_load((peer_dir / "data" / "coco.yaml").read_text())["names"]
    colors = [[int(c) for c in np.random.RandomState(index).randint(0, 255, 3)] for index in range(len(names))]
    images = json.loads(Path(args.image_list).read_text())
    (out / "images").mkdir(parents=True, exist_ok=True)

    def one_image(path: str, name: str) -> tuple[dict, list]:
        t0 = time.perf_counter_ns()
        im0 = cv2.imread(path)  # BGR
        img = letterbox(im0, args.img_size, stride=stride)[0]
        img = img[:, :, ::-1].transpose(2, 0, 1)  # BGR to RGB, to 3xHxW
        img = np.ascontiguousarray(img)
        img = torch.from_numpy(img).float()
        img /= 255.0
        if img.ndimension() == 3:
            img = img.unsqueeze(0)
        t1 = time.perf_counter_ns()
        with torch.no_grad():
            pred = model(img)[0]
        t2 = time.perf_counter_ns()
        pred = non_max_suppression(pred, args.conf_thres, args.iou_thres)
        det = pred[0]
        if len(det):
            det[:, :4] = scale_coords(img.shape[2:], det[:, :4], im0.shape)
        exact = det.clone()  # what the CSV keeps: detbench does not round
        det[:, :4] = det[:, :4].round()  # detect.py: scale_coords(...).round()
        t3 = time.perf_counter_ns()
        for *xyxy, conf, cls in reversed(det):
            plot_one_box(xyxy, im0, label=f"{names[int(cls)]} {conf:.2f}", color=colors[int(cls)], line_thickness=1)
        cv2.imwrite(str(out / "images" / Path(name).name), im0)
        t4 = time.perf_counter_ns()
        timing = {"read_preprocess_ms": (t1 - t0) / 1e6, "forward_ms": (t2 - t1) / 1e6,
                  "nms_scale_ms": (t3 - t2) / 1e6, "pipeline_ms": (t3 - t0) / 1e6, "annotate_save_ms": (t4 - t3) / 1e6,
                  "detections": len(det)}
        return timing, exact.tolist()

    warm = images if args.warmup == "auto" else images[:int(args.warmup)]
    for path, name in warm:
        one_image(path, name)
    records, rows = [], []
    faults_before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for repeat in range(args.repeats):
        for path, name in images:
            timing, found = one_image(path, name)
            records.append({"image": name, "pass": repeat, **timing})
            if repeat == 0:
                rows += [(name, int(cls), score, x1, y1, x2, y2) for x1, y1, x2, y2, score, cls in found]
    # Page faults of the whole process over the timed passes (drawing and writing included, as detbench's
    # counters count its process around its pipeline steps).
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults_before
    with open(out / "detections.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("image", "class", "score", "x1", "y1", "x2", "y2"))
        for name, cls, score, x1, y1, x2, y2 in rows:
            writer.writerow((name, cls, f"{score:.6f}", f"{x1:.3f}", f"{y1:.3f}", f"{x2:.3f}", f"{y2:.3f}"))
    pipeline = [record["pipeline_ms"] for record in records]
    annotate = [record["annotate_save_ms"] for record in records]
    times = {
        "peer": {"distribution": f"{OFFICIAL}=={distribution(OFFICIAL).version}", "models": official_models.__file__,
                 "cfg": args.cfg, "steps": "detect.py --no-trace, batch 1, CPU fp32"},
        "torch": torch.__version__, "threads": torch.get_num_threads(), "cv2_threads": cv2.getNumThreads(),
        "warmup_images": len(warm), "repeats": args.repeats, "images": [n for _, n in images],
        "detections": len(rows),
        "pipeline": {"definition": "cv2.imread + letterbox + to tensor /255 + forward + NMS + scale_coords",
                     "images_timed": len(pipeline), "total_ms": sum(pipeline),
                     "images_per_s": len(pipeline) / (sum(pipeline) / 1000.0) if pipeline else None,
                     "p50_ms_per_image": statistics.median(pipeline) if pipeline else None,
                     "forward_p50_ms": statistics.median(r["forward_ms"] for r in records) if records else None,
                     "minor_faults_per_image": faults / len(records) if records else None},
        "annotate_save": {"definition": "plot_one_box per detection + cv2.imwrite", "total_ms": sum(annotate),
                          "p50_ms_per_image": statistics.median(annotate) if annotate else None},
        "per_image": records,
    }
    (out / "times.json").write_text(json.dumps(times, indent=1))
    return OK


def whole_number(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", required=True, help="the calibrated state_dict")
    parser.add_argument("--image-list", required=True, help="JSON list of [path, name] pairs")
    parser.add_argument("--out", required=True, help="where detections.csv, times.json and images/ go")
    parser.add_argument("--threads", type=whole_number, required=True)
    parser.add_argument("--warmup", required=True, type=lambda text: text if text == "auto" else whole_number(text))
    parser.add_argument("--repeats", type=whole_number, required=True)
    parser.add_argument("--img-size", type=whole_number, required=True)
    parser.add_argument("--cfg", required=True, help="the official model config, relative to the official code")
    parser.add_argument("--conf-thres", type=float, required=True)
    parser.add_argument("--iou-thres", type=float, required=True)
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run_peer(parse_args(None)))
