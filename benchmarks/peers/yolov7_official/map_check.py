"""detbench's mAP against the official test.py's own: test.py's --save-json detections scored by pycocotools.

    .venv/bin/python benchmarks/peers/yolov7_official_map.py [--data ../shared/data/shapes] [--img-size 320]
        [--batch-size 1,32]

The official test.py (downloaded at run time, never imported here; its own venv's Python runs
benchmarks/peers/drivers/run_yolov7_test.py) runs on a copy of the labelled set (its
loader writes a label cache beside the labels) with its defaults for mAP: conf 0.001, NMS IoU 0.65, multi-label,
rectangular batches padded by half a stride, once per --batch-size. Its rectangles are per batch of images sorted
by aspect ratio, so its mAP moves with its batch size; at batch 1 each image has its own. pycocotools scores each
json against the set's instances.json. detbench runs the same checkpoint on the same images with its accuracy pass
(torch fp32, the same thresholds, batch 1): by default (`benchmark.accuracy.preprocess: official`, test.py's
letterbox), and with the deployed square letterbox and `preprocess.rect`. Printed: each mAP, the differences,
and whether detbench's default is within the issue's 0.002 of test.py's json at the same rectangles (batch 1).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Sequence

from benchmarks.common.detbench_runs import benchmark_command
from benchmarks.peers import venvs
from benchmarks.peers.yolov7_official.peer_setup import (default_cache_dir, ensure_official_venv, ensure_wheel,
                                                         run_logged)
from benchmarks.peers.yolov7_official.specs import PROJECT_ROOT
from utils.core.errors import EnvironmentFault, UsageError

TOLERANCE = 0.002
TEST_PY = venvs.DRIVERS / "run_yolov7_test.py"
ACCURACY_IOU = 0.65  # test.py's --iou-thres default, and detbench's benchmark.accuracy default


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(PROJECT_ROOT.parent / "shared" / "data" / "shapes"),
                        help="a labelled set: images/, labels/ (YOLO), instances.json (COCO) and one .pt checkpoint")
    parser.add_argument("--img-size", type=int, default=320)
    parser.add_argument("--batch-size", default="1,32",
                        help="test.py's batch sizes, comma-separated (its rectangles are per batch)")
    parser.add_argument("--output-dir", default=None, help="default: outputs/official_map/<UTC time>")
    parser.add_argument("--cache-dir", default=None, help="the official wheel's cache (default as official_parity)")
    args = parser.parse_args(argv)
    data = Path(args.data).resolve()
    for needed in ("images", "labels", "instances.json"):
        if not (data / needed).exists():
            raise UsageError(f"--data {data}: no {needed} there; a labelled set holds images/, labels/ and "
                             "instances.json")
    if not list(data.glob("*.pt")):
        raise UsageError(f"--data {data}: no .pt checkpoint there")
    args.data = data
    try:
        args.batch_size = [int(value) for value in args.batch_size.split(",")]
    except ValueError:
        raise UsageError(f"--batch-size {args.batch_size}: give whole numbers separated by commas, e.g. 1,32") from None
    if not args.batch_size or min(args.batch_size) < 1:
        raise UsageError(f"--batch-size {args.batch_size}: each batch size must be at least 1")
    return args


def run_test_py(python: Path, data: Path, weights: Path, img_size: int, batch: int, out: Path) -> tuple[Path, dict]:
    """test.py --save-json on a copy of the set (its loader writes a label cache beside the labels); returns its
    predictions json and its RESULT (test()'s own mAP@0.5 and mAP@0.5:0.95)."""
    out = out / f"test_py_batch_{batch}"
    copy = out / "data"
    for part in ("images", "labels"):
        shutil.copytree(data / part, copy / part, dirs_exist_ok=True)
    names = [str(index) for index in range(80)]
    (out / "data.yaml").write_text(json.dumps({"val": str(copy / "images"), "train": str(copy / "images"),
                                               "nc": 80, "names": names}))
    command = [str(python), str(TEST_PY), "--weights", str(weights), "--data", str(out / "data.yaml"),
               "--img-size", str(img_size), "--batch-size", str(batch), "--conf-thres", "0.001",
               "--iou-thres", str(ACCURACY_IOU), "--save-json", "--project", str(out / "peer")]
    result = run_logged(command, out / "logs" / "test_py.log", env=venvs.peer_environment(os.environ), cwd=str(out))
    said = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    found = json.loads(said[-1][len("RESULT "):]) if said else {}
    if result.returncode != 0 or not found.get("predictions"):
        raise EnvironmentFault(f"the official test.py did not finish (exit {result.returncode}); see "
                               f"{out / 'logs' / 'test_py.log'}")
    table = re.search(r"^\s+all\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)", result.stdout + result.stderr,
                      re.MULTILINE)
    (out / "test_py_table.json").write_text(json.dumps(
        {"map_50": float(table.group(1)), "map_50_95": float(table.group(2))} if table else {}))
    return Path(found["predictions"]), found


def score_json(predictions: Path, instances: Path) -> tuple[float, float, int]:
    """pycocotools' mAP@0.5:0.95 and mAP@0.5 of test.py's json (image ids are file stems there)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    truth = COCO(str(instances))
    by_stem = {Path(image["file_name"]).stem: image["id"] for image in truth.dataset["images"]}
    found = json.loads(predictions.read_text())
    for item in found:
        item["image_id"] = by_stem[str(item["image_id"])]
    evaluation = COCOeval(truth, truth.loadRes(found), "bbox")
    evaluation.params.imgIds = sorted(by_stem.values())
    evaluation.evaluate()
    evaluation.accumulate()
    evaluation.summarize()
    return float(evaluation.stats[0]), float(evaluation.stats[1]), len(found)


DETBENCH_VARIANTS = {  # name: the accuracy pass's preprocessing
    "detbench, default (official letterbox)": ("official", False),
    "detbench, deployed square letterbox": ("deployed", False),
    "detbench, deployed preprocess.rect": ("deployed", True),
}


def run_detbench(data: Path, weights: Path, img_size: int, out: Path, preprocess: str, rect: bool) -> tuple[float, float]:
    run_id = preprocess + ("_rect" if rect else "")
    sets = [f"dataset.path={data / 'images'}", f"dataset.labels={data / 'instances.json'}", f"model.weights={weights}",
            "model.arch=yolov7-tiny", f"preprocess.img_size={img_size}", f"preprocess.rect={str(rect).lower()}",
            f"benchmark.accuracy.preprocess={preprocess}",
            "runtime.backend=torch", "runtime.precision=fp32", "runtime.threads=2", "dataset.batch_size=1",
            f"benchmark.accuracy.iou_thres={ACCURACY_IOU}", "benchmark.accuracy.conf_thres=0.001",
            "benchmark.accuracy.multi_label=true", "benchmark.layer_timing=false", "benchmark.warmup=1",
            "benchmark.repeats=1", "outputs.save_images=false", "outputs.plots=false", "outputs.report=false",
            "dataset.limit=null", f"run.output_dir={out / 'detbench'}", f"run.id={run_id}"]
    command = benchmark_command(PROJECT_ROOT / "configs" / "shapes.yaml", sets)
    result = run_logged(command, out / "logs" / f"detbench_{run_id}.log", cwd=str(PROJECT_ROOT))
    summary = out / "detbench" / run_id / "summary.json"
    if result.returncode != 0 or not summary.is_file():
        raise EnvironmentFault(f"detbench did not finish (exit {result.returncode}); see "
                               f"{out / 'logs' / f'detbench_{run_id}.log'}")
    accuracy = json.loads(summary.read_text())["accuracy"]
    return accuracy["map_50_95"], accuracy["map_50"]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    out = Path(args.output_dir or PROJECT_ROOT / "outputs" / "official_map" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    out.mkdir(parents=True, exist_ok=True)
    cache = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    python = ensure_official_venv(cache, ensure_wheel(cache, None, out / "logs"))
    weights = next(args.data.glob("*.pt"))
    rows, official = [], {}
    for batch in args.batch_size:
        print(f"official test.py on {args.data} at {args.img_size} px, batch {batch}...", flush=True)
        predictions, _ = run_test_py(python, args.data, weights, args.img_size, batch, out)
        official[batch] = score_json(predictions, args.data / "instances.json")
        rows.append((f"test.py at batch {batch}, its json scored by pycocotools", *official[batch][:2]))
        table = json.loads((out / f"test_py_batch_{batch}" / "test_py_table.json").read_text())
        if table:
            rows.append((f"test.py at batch {batch}, its own printed table", table["map_50_95"], table["map_50"]))
    for name, (preprocess, rect) in DETBENCH_VARIANTS.items():
        print(f"{name}...", flush=True)
        rows.append((name, *run_detbench(args.data, weights, args.img_size, out, preprocess, rect)))
    print(f"\n{args.data.name}: conf 0.001, NMS IoU {ACCURACY_IOU}, multi-label, {args.img_size} px, detbench at "
          f"batch 1 ({time.perf_counter() - started:.0f} s)")
    batches = sorted(official)
    print("| scored | mAP@0.5:0.95 | mAP@0.5 | " + " | ".join(f"against test.py's json at batch {b}" for b in batches)
          + " |\n|---|---|---|" + "---|" * len(batches))
    for name, map_50_95, map_50 in rows:
        print(f"| {name} | {map_50_95:.4f} | {map_50:.4f} | "
              + " | ".join(f"{map_50_95 - official[b][0]:+.4f}" for b in batches) + " |")
    default = next(value for name, value, _ in rows if name.startswith("detbench, default"))
    same = min(batches)
    gap = abs(default - official[same][0])
    print(f"\ndetbench's default within {TOLERANCE} of test.py's json at batch {same}: {'yes' if gap <= TOLERANCE else 'no'} "
          f"({gap:.4f}); files in {out}")
    return 0
