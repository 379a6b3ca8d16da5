"""Is detbench's mAP right, and what do int8 and the fastest configuration within the budget give: the
accuracy goals (issue 14), measured.

    .venv/bin/python benchmarks/studies/map_and_int8_goals.py [--rounds 2] [--threads 2] [--skip-official]
        [--skip-yolov7]

Prints its figures and whether each goal is met; a measurement, never a test (the exit status does not depend
on the goals). Speed figures are medians over interleaved rounds (each round runs every configuration once,
so drift of a shared machine spreads over all of them); ratios are taken within a round.

1. mAP equals pycocotools' on the same detections (|difference| <= 1e-4): the torch fp32 detections of the
   shapes model at mAP settings, evaluated by utils.checks.accuracy.coco_map (faster-coco-eval) and by pycocotools.
2. mAP within 0.02 of YOLOv7's own test.py on the same checkpoint and images. The official code (GPL-3.0) is
   driven as benchmarks/peers/yolov7_official_map.py drives it: the wheel is downloaded at run time into a cache,
   installed into its own venv, and test.test(conf 0.001, IoU 0.65, img 320, batch 1) runs there
   (benchmarks/peers/drivers/run_yolov7_test.py) on a copy of the first 48 scenes' images and labels side by side.
   The checkpoint is read there with torch.load(weights_only=False): it is the project's own file.
3. OpenVINO int8 on the shapes model: mAP@0.5:0.95 drop <= 0.01 against torch fp32; forward >= 2x OpenVINO
   fp32's.
4. The shapes model (batch 1, 2 threads): the fastest `within_budget` configuration (utils.commands.sweep.answer.choose
   over torch fp32, OpenVINO and ONNX Runtime fp32 and int8) >= 2x the torch fp32 eager pipeline's images/s.
5. yolov7 at 640 (random weights, the sample photos): OpenVINO int8 forward >= 2.3x torch eager's; its verdict
   must say `different` (random weights give int8 nothing to agree on).
6. An accuracy evaluation of 5,000 images adds at most 15 s: the shapes detections tiled to 5,000 images and
   evaluated by coco_evaluation (plus, for information, the bootstrap interval of a drop).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.common.detbench_runs import benchmark_command  # noqa: E402
from utils.core.errors import EnvironmentFault, ExitStatus, command_status  # noqa: E402

SHAPES = PROJECT_ROOT / "datasets" / "shapes"
CONFIGURATIONS = (("torch", "fp32"), ("openvino", "fp32"), ("openvino", "int8"), ("onnxruntime", "fp32"),
                  ("onnxruntime", "int8"))


def detbench(out: Path, run_id: str, backend: str, precision: str, threads: int, extra: list[str]) -> dict:
    command = benchmark_command(PROJECT_ROOT / "configs" / "shapes.yaml", [
        f"runtime.backend={backend}", f"runtime.precision={precision}", f"runtime.threads={threads}",
        f"run.output_dir={out}", f"run.id={run_id}", "outputs.save_images=false", "outputs.plots=false",
        "outputs.report=false", "benchmark.layer_timing=false", "benchmark.repeats=2", *extra])
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"detbench {backend} {precision} failed ({result.returncode}): {result.stderr[-400:]}")
    return json.loads((out / run_id / "summary.json").read_text())


def goal(name: str, figure: str, met: bool) -> str:
    return f"[{'met' if met else 'NOT met'}] {name}: {figure}"


def pycocotools_goal(out: Path, threads: int) -> tuple[str, dict]:
    import torch
    from datasets.image_folder import DatasetBatches, find_images
    from datasets.labels import load_ground_truth
    from pipelines.runtimes.torch.session import TorchEager
    from pipelines.yolo import family
    from tests.utils.checks.accuracy.test_coco_map import pycocotools_stats
    from utils.config.schema import config_for
    from utils.checks.accuracy.accuracy_pass import detect
    from utils.checks.accuracy.coco_map import coco_evaluation

    torch.set_num_threads(threads)
    paths = find_images(SHAPES / "images")
    network = family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), 0)
    config = config_for("yolov7-tiny", preprocess={"img_size": 320},
                        postprocess={"conf_thres": 0.001, "iou_thres": 0.65, "max_det": 300})
    pre, post = config.preprocess, config.postprocess
    pipeline = family.build_pipeline(network, TorchEager().prepare(network, family.example_input(pre)), pre, post)
    found = detect(pipeline, DatasetBatches(paths, 1), "torch fp32 at mAP settings")
    truths = load_ground_truth(SHAPES / "labels", SHAPES / "images", paths, network.class_names).images
    ours = coco_evaluation(truths, found)
    # pycocotools' stats, built by the test suite's independent reference (tests/utils/checks/accuracy/test_coco_map.py)
    stats = pycocotools_stats(truths, found)
    detections = sum(len(d.scores) for d in found)
    difference = abs(ours.map_50_95 - stats[0])
    line = goal("mAP equals pycocotools' (1e-4)", f"ours {ours.map_50_95:.6f}, pycocotools {stats[0]:.6f}, "
                f"|difference| {difference:.1e} ({len(paths)} images, {detections} detections)", difference <= 1e-4)
    return line, {"truths": truths, "found": found, "map_50_95": ours.map_50_95, "map_50": ours.map_50}


def official_goal(out: Path, ours: dict, images: int) -> str:
    from benchmarks.peers.yolov7_official.map_check import run_test_py
    from benchmarks.peers.yolov7_official.peer_setup import default_cache_dir, ensure_official_venv, ensure_wheel

    cache, logs = default_cache_dir(), out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    python = ensure_official_venv(cache, ensure_wheel(cache, None, logs))
    dataset = out / "official" / "shapes"
    (dataset / "images").mkdir(parents=True, exist_ok=True)
    (dataset / "labels").mkdir(parents=True, exist_ok=True)
    for image in sorted((SHAPES / "images").iterdir())[:images]:
        shutil.copy(image, dataset / "images")
        shutil.copy(SHAPES / "labels" / f"{image.stem}.txt", dataset / "labels")
    try:
        _, theirs = run_test_py(python, dataset, SHAPES / "yolov7-tiny-shapes.pt", 320, 1, out / "official")
    except EnvironmentFault as error:
        return goal("mAP within 0.02 of YOLOv7's test.py", f"the official test.py failed: {error}", False)
    difference = abs(theirs["map_50_95"] - ours["map_50_95"])
    return goal("mAP within 0.02 of YOLOv7's test.py", f"ours {ours['map_50_95']:.4f} (mAP@0.5 {ours['map_50']:.4f}), "
                f"test.py {theirs['map_50_95']:.4f} (mAP@0.5 {theirs['map_50']:.4f}), |difference| {difference:.4f} "
                "(ours: square letterbox; test.py: rect batches, multi-label NMS)", difference <= 0.02)


def shapes_goals(out: Path, rounds: int, threads: int) -> list[str]:
    from utils.storage.finished_run import FinishedRun
    from utils.commands.sweep.answer import PointFigures, choose

    runs: dict[tuple[str, str], list[dict]] = {c: [] for c in CONFIGURATIONS}
    samples: dict[tuple[str, str], list[float]] = {c: [] for c in CONFIGURATIONS}
    for round_index in range(rounds):
        for backend, precision in CONFIGURATIONS:
            run_id = f"r{round_index}-{backend}-{precision}"
            print(f"  shapes round {round_index + 1}/{rounds}: {backend} {precision}", flush=True)
            runs[(backend, precision)].append(detbench(out / "shapes", run_id, backend, precision, threads, []))
            samples[(backend, precision)] += FinishedRun(out / "shapes" / run_id).per_image_samples()

    def median(config, path):
        values = []
        for summary in runs[config]:
            node = summary
            for part in path.split("."):
                node = node[part]
            values.append(node)
        return statistics.median(values)

    def ratio(a, b, path):  # median over rounds of b/a within a round
        values = []
        for first, second in zip(runs[a], runs[b]):
            x, y = first, second
            for part in path.split("."):
                x, y = x[part], y[part]
            values.append(y / x)
        return statistics.median(values)

    lines = []
    ov8, ov32, torch32 = ("openvino", "int8"), ("openvino", "fp32"), ("torch", "fp32")
    drops = [summary["accuracy"]["drop"]["map_50_95"] for summary in runs[ov8]]
    forward = ratio(ov8, ov32, "forward.p50_ms_per_image")
    lines.append(goal("OpenVINO int8 mAP drop <= 0.01 vs torch fp32", f"drop {statistics.median(drops):+.4f} "
                      f"(mAP {median(ov8, 'accuracy.map_50_95'):.4f} vs {median(ov8, 'accuracy.reference.map_50_95'):.4f}"
                      f"; verdict {runs[ov8][-1]['agreement']['verdict']})", statistics.median(drops) <= 0.01))
    lines.append(goal("OpenVINO int8 forward >= 2x OpenVINO fp32", f"x{forward:.2f} ({median(ov32, 'forward.p50_ms_per_image'):.1f} "
                      f"-> {median(ov8, 'forward.p50_ms_per_image'):.1f} ms/image)", forward >= 2.0))
    points = []
    for config in CONFIGURATIONS:
        verdict = "reference" if config == torch32 else runs[config][-1]["agreement"]["verdict"]
        points.append(PointFigures(f"{config[0]}:{config[1]}", {}, statistics.median(samples[config]),
                                   median(config, "pipeline_latency.images_per_s"), verdict, tuple(samples[config]),
                                   median(config, "accuracy.map_50_95"),
                                   None if config == torch32 else median(config, "accuracy.drop.map_50_95")))
    answer = choose(points)
    best = answer["fastest_within_budget"]
    config = tuple(best["point"].split(":"))
    speedup = ratio(torch32, config, "pipeline_latency.images_per_s") if config != torch32 else 1.0
    lines.append(goal("fastest within_budget >= 2x torch fp32 pipeline images/s",
                      f"{best['point']} x{speedup:.2f} ({median(torch32, 'pipeline_latency.images_per_s'):.1f} -> "
                      f"{median(config, 'pipeline_latency.images_per_s'):.1f} images/s), verdict {best['agreement']}, "
                      f"mAP drop {best['map_drop'] if best['map_drop'] is not None else 0:+.4f}", speedup >= 2.0))
    table = ["    configuration        images/s  forward ms  mAP@.5:.95  drop     verdict"]
    for point in points:
        c = tuple(point.name.split(":"))
        table.append(f"    {point.name:20s} {point.images_per_s:8.1f}  {median(c, 'forward.p50_ms_per_image'):10.1f}  "
                     f"{point.map_50_95:10.4f}  {point.map_drop if point.map_drop is not None else 0:+.4f}  {point.agreement}")
    lines.append("  shapes configurations (medians over rounds):\n" + "\n".join(table))
    lines.append(f"  answer: {answer['statement']}")
    return lines


def yolov7_goal(out: Path, rounds: int, threads: int) -> str:
    ratios, verdicts, forwards = [], [], {"torch": [], "openvino": []}
    common = ["model.arch=yolov7", "model.weights=null", "dataset.path=datasets/samples", "dataset.labels=null",
              "preprocess.img_size=640", "runtime.calibration.images=6", "benchmark.repeats=1", "benchmark.warmup=1"]
    for round_index in range(rounds):
        print(f"  yolov7 round {round_index + 1}/{rounds}", flush=True)
        eager = detbench(out / "yolov7", f"r{round_index}-torch", "torch", "fp32", threads, common)
        int8 = detbench(out / "yolov7", f"r{round_index}-openvino-int8", "openvino", "int8", threads, common)
        forwards["torch"].append(eager["forward"]["p50_ms_per_image"])
        forwards["openvino"].append(int8["forward"]["p50_ms_per_image"])
        ratios.append(eager["forward"]["p50_ms_per_image"] / int8["forward"]["p50_ms_per_image"])
        verdicts.append(int8["agreement"]["verdict"])
    speedup = statistics.median(ratios)
    return goal("yolov7 640 OpenVINO int8 forward >= 2.3x torch eager, verdict different on random weights",
                f"x{speedup:.2f} ({statistics.median(forwards['torch']):.0f} -> "
                f"{statistics.median(forwards['openvino']):.0f} ms/image), verdicts {verdicts}",
                speedup >= 2.3 and all(v == "different" for v in verdicts))


def evaluation_goal(ours: dict, images: int = 5000) -> str:
    from utils.checks.accuracy.coco_map import coco_evaluation, map_drop_interval

    truths, found = ours["truths"], ours["found"]
    tiled_truths = [truths[i % len(truths)] for i in range(images)]
    tiled_found = [found[i % len(found)] for i in range(images)]
    started = time.perf_counter()
    result = coco_evaluation(tiled_truths, tiled_found)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    map_drop_interval(tiled_truths, tiled_found, tiled_found, resamples=200)
    bootstrap = time.perf_counter() - started
    detections = sum(len(d.scores) for d in tiled_found)
    return goal(f"evaluating {images} images adds <= 15 s", f"{seconds:.1f} s for {detections} detections (mAP "
                f"{result.map_50_95:.4f}); the drop's bootstrap interval (200 resamples, beside a reference) adds "
                f"{bootstrap:.1f} s more", seconds <= 15.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output-dir", default=None)
    parser.add_argument("--skip-official", action="store_true", help="do not download and run YOLOv7's test.py")
    parser.add_argument("--skip-yolov7", action="store_true", help="skip the yolov7 at 640 goal (minutes per round)")
    args = parser.parse_args()
    os.chdir(PROJECT_ROOT)
    out = Path(args.output_dir or tempfile.mkdtemp(prefix="detbench-accuracy-goals-"))
    print(f"accuracy goals: outputs under {out}; CPU flags matter for int8 (VNNI/AMX)", flush=True)
    lines = []
    line, ours = pycocotools_goal(out, args.threads)
    lines.append(line)
    print(line, flush=True)
    for step in ([] if args.skip_official else [lambda: official_goal(out, ours, 48)]) + \
            [lambda: evaluation_goal(ours)]:
        lines.append(step())
        print(lines[-1], flush=True)
    for line in shapes_goals(out, args.rounds, args.threads):
        lines.append(line)
        print(line, flush=True)
    if not args.skip_yolov7:
        lines.append(yolov7_goal(out, args.rounds, args.threads))
        print(lines[-1], flush=True)
    (out / "goals.txt").write_text("\n".join(lines) + "\n")
    print(f"\nwritten: {out / 'goals.txt'}")
    return ExitStatus.OK


if __name__ == "__main__":
    sys.exit(command_status(main))
