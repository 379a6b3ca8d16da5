"""detbench on real exported files against what their exporter itself says: shared/data/ultra's YOLO11n.

    .venv/bin/python benchmarks/peers/ultralytics_exported_files.py [--ultra ../shared/data/ultra] [--map]
        [--runtimes ...]
        [--precisions fp32 bf16]

For each file (ONNX static, dynamic, with NMS; the OpenVINO IR) and each runtime that reads it: detections on
the images of `expected.json` against Ultralytics' own predictions through the static ONNX (recall and precision
at IoU 0.5, same class), and with --map the mAP@0.5:0.95 over the 200 labelled shapes scenes beside Ultralytics'
val figure. Then a whole detbench run per file x runtime x precision for its images/s and verdict.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402
from benchmarks.common.machine import flags_starting  # noqa: E402
from datasets.image_folder import decode_image  # noqa: E402
from pipelines.contract import Detections  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.registry import build_runtime  # noqa: E402
from utils.config.schema import config_for  # noqa: E402
from utils.checks.agreement.matching import MatchCounts, match_detections  # noqa: E402

FILES = {"static ONNX": "yolo11n-shapes.onnx", "dynamic ONNX": "yolo11n-shapes-dynamic.onnx",
         "ONNX with NMS": "yolo11n-shapes-nms.onnx", "OpenVINO IR": "yolo11n-shapes_openvino_model/yolo11n-shapes.xml"}


def pipeline_of(file: Path, backend: str, precision: str = "fp32", **postprocess):
    config = config_for("yolov7", model={"file": str(file)}, postprocess=postprocess,
                        runtime={"backend": backend, "precision": precision})
    family = family_for(config.model.network)
    network = family.load_network(config.model.network, None, 0)
    runtime = build_runtime(backend, precision=precision, threads=config.runtime.threads)
    forward = runtime.prepare(network, family.example_input(config.preprocess))
    return family.build_pipeline(network, forward, config.preprocess, config.postprocess), config


def against_ultralytics(file: Path, backend: str, expected: dict, data: Path) -> MatchCounts:
    pipeline, _ = pipeline_of(file, backend)
    counts = MatchCounts()
    for name, rows in expected["onnx_predictions"]["images"].items():
        found = pipeline([decode_image(data / name).image])[0]
        theirs = torch.tensor(rows, dtype=torch.float32).reshape(-1, 6)
        own = Detections(theirs[:, 2:6], theirs[:, 1], theirs[:, 0].long())
        counts = counts + match_detections(own, found)
    return counts


def map_on_shapes(file: Path, backend: str, data: Path) -> float:
    from datasets.image_folder import DatasetBatches, find_images
    from datasets.labels import load_ground_truth
    from utils.checks.accuracy.accuracy_pass import detect
    from utils.checks.accuracy.coco_map import coco_evaluation

    _, config = pipeline_of(file, backend)
    accuracy = config.benchmark.accuracy
    pipeline, _ = pipeline_of(file, backend, conf_thres=accuracy.conf_thres, iou_thres=accuracy.iou_thres,
                              max_det=accuracy.max_det)
    if accuracy.multi_label is not None:
        nms = pipeline.decoder.nms
        nms.settings = dataclasses.replace(nms.settings, multi_label=accuracy.multi_label)
    paths = find_images(data / "shapes" / "images")
    truth = load_ground_truth(str(data / "shapes" / "labels"), str(data / "shapes" / "images"), paths,
                              pipeline.class_names)
    found = detect(pipeline, DatasetBatches(paths, 1), "shapes scenes")
    return coco_evaluation(truth.images, found, pipeline.class_names).map_50_95


def run_row(file: Path, backend: str, precision: str, out: Path, data: Path) -> str:
    """A whole run on the first 100 labelled shapes scenes (int8 calibrates on the last 50 of them): images/s,
    the forward's p50, the verdict with labels (the mAP drop against the reference, its interval) and agreement."""
    run_id = f"{file.name.replace('.', '-')}-{backend}-{precision}"  # the static ONNX and the IR share a stem
    command = benchmark_command(ROOT / "configs" / "samples_tiny.yaml", [
        f"model.file={file}", "preprocess.img_size=null", f"dataset.path={data / 'shapes' / 'images'}",
        "dataset.limit=150", f"dataset.labels={data / 'shapes' / 'labels'}", "runtime.calibration.images=50",
        "benchmark.accuracy.images=100", "dataset.batch_size=1", f"runtime.backend={backend}",
        f"runtime.precision={precision}", f"run.output_dir={out}", f"run.id={run_id}", "benchmark.layer_timing=false",
        "outputs.save_images=false", "outputs.plots=false", "benchmark.repeats=5"])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return f"exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}"
    summary = json.loads((out / run_id / "summary.json").read_text())
    agreement = (summary.get("agreement") or {}).get("verdict", "reference itself")  # with the mAP budget applied
    accuracy = summary.get("accuracy") or {}
    drop = accuracy.get("drop") or {}
    interval = drop.get("interval") or {}
    rate = summary["pipeline_latency"]["images_per_s"]
    shown = (f"; mAP {accuracy['map_50_95']:.4f}" if accuracy.get("map_50_95") is not None else "") + (
        f", drop {drop['map_50_95']:+.4f} [{interval.get('low', float('nan')):+.4f}, "
        f"{interval.get('high', float('nan')):+.4f}]" if drop else "")
    return (f"{rate:.1f} images/s, forward p50 {summary['forward']['p50_ms_per_image']:.1f} ms; verdict "
            f"{agreement}{shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ultra", type=Path, default=ROOT.parent / "shared" / "data" / "ultra")
    parser.add_argument("--map", action="store_true", help="also the mAP on the 200 shapes scenes (minutes)")
    parser.add_argument("--runtimes", nargs="*", default=["onnxruntime", "openvino"])
    parser.add_argument("--precisions", nargs="*", default=["fp32", "bf16", "int8"])
    args = parser.parse_args()
    expected = json.loads((args.ultra / "expected.json").read_text())
    data = args.ultra.parent
    flags = flags_starting(("avx512_bf16", "amx", "avx512_vnni", "avx_vnni", "avx2"))
    print(f"CPU flags: {' '.join(flags)}; {torch.get_num_threads()} threads; Ultralytics' val mAP "
          f"{expected['val']['map50_95']} ({expected['val']['how']})")
    with tempfile.TemporaryDirectory() as out:
        for what, name in FILES.items():
            file = args.ultra / name
            for backend in args.runtimes:
                if backend == "onnxruntime" and file.suffix != ".onnx":
                    continue
                counts = against_ultralytics(file, backend, expected, data)
                line = (f"{what} on {backend}: {counts.candidate} detections against Ultralytics' {counts.reference}, "
                        f"recall {counts.loose_recall:.3f}, precision {counts.loose_precision:.3f}")
                if args.map:
                    line += f"; mAP@0.5:0.95 on the shapes scenes {map_on_shapes(file, backend, data):.4f}"
                print(line)
                for precision in args.precisions:
                    if (precision == "bf16" and backend != "openvino") or (precision == "int8" and file.suffix != ".onnx"):
                        continue
                    print(f"  {precision}: {run_row(file, backend, precision, Path(out), data)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
