"""detbench's pipeline and forward against Ultralytics' own predict loop, on the same shipped YOLO11n file, the same
scenes, threads and batch 1, in interleaved rounds.

    .venv/bin/python benchmarks/peers/ultralytics_predict.py [--rounds 5] [--images 200] [--threads 2]
        [--sides onnx openvino] [--peer-venv ~/.cache/detbench-peers/ultralytics]
        [--ultra ../shared/data/ultra] [--shapes ../shared/data/shapes]

A side is a file and the runtime both run it on:
  - onnx: `yolo11n-shapes.onnx` on ONNX Runtime at fp32. The peer's session keeps ONNX Runtime's defaults (every
    core, spinning on); detbench runs runtime.spinning at its default (ONNX Runtime's own) with --threads threads.
  - openvino: the IR `yolo11n-shapes_openvino_model/` on OpenVINO. The peer compiles it with the LATENCY hint and
    no precision hint, so on a CPU with native bf16 it runs bf16; detbench runs runtime.precision bf16 there (fp32
    on a CPU without), so both run the same precision.

The peer: Ultralytics' `YOLO(file).predict(paths, stream=True, batch=1, imgsz=320)` over the scenes after a warm-up
of 10 of them, in its own virtual environment (--peer-venv, with ultralytics, onnxruntime and openvino installed, as
benchmarks/peers/ultralytics_benchmark.py makes it; this script installs nothing), as a subprocess
(benchmarks/peers/drivers/run_ultralytics_predict.py), offline, at its default conf (0.25) and IoU (0.7). Its
figures: the
median of each result's speed dict (preprocess, inference, postprocess: ms, image reading left out) and the wall
time of the whole loop per image (reading the images included). torch's threads there are --threads.

detbench: one run of `benchmark.py --config configs/files.yaml` on the same file and scenes, batch 1, --threads,
conf 0.25 and IoU 0.7, one timed pass, accuracy and agreement passes off, layer timing off. Its figures: the forward
p50 per image (beside the peer's inference), the mean per image of the pipeline without image decoding (beside the
peer's preprocess + inference + postprocess) and the pipeline's mean per image with decoding (beside the peer's
wall time).

Rounds alternate which side runs first. Each ratio (peer over detbench: above 1, detbench is faster) is taken
within a round and quoted as the median over rounds with its 90% interval (from 5 rounds) or its range. The machine
may be shared: the load average of each round is printed. Ultralytics is AGPL-3.0 and never imported here.
Figures: benchmarks/RESULTS.md.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.detbench_runs import benchmark_command, undecoded_ms_per_image  # noqa: E402
from benchmarks.common.machine import cpu_model, flags_among  # noqa: E402
from benchmarks.common.rounds import alternated  # noqa: E402
from benchmarks.peers import venvs  # noqa: E402
from utils.core.errors import FailedRun, command_status  # noqa: E402
from utils.record.statistics import GOAL_INTERVAL, median_confidence_interval  # noqa: E402

IMG_SIZE = 320
CONF, IOU = 0.25, 0.7
WARMUP_IMAGES = 10
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")


def sides(ultra: Path, bf16: bool) -> dict[str, dict]:
    """Each side's file for the peer, file for detbench (an IR's .xml) and detbench's runtime and precision."""
    folder = ultra / "yolo11n-shapes_openvino_model"
    return {"onnx": {"peer_file": ultra / "yolo11n-shapes.onnx", "file": ultra / "yolo11n-shapes.onnx",
                     "backend": "onnxruntime", "precision": "fp32"},
            "openvino": {"peer_file": folder, "file": folder / "yolo11n-shapes.xml", "backend": "openvino",
                         "precision": "bf16" if bf16 else "fp32"}}


def run_peer(python: Path, side: dict, images: list[Path], work: Path, threads: int, timeout: int) -> dict:
    # The peer writes beside what it loads; it gets its own copy of the file.
    copy = work / "peer" / side["peer_file"].name
    if not copy.exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if side["peer_file"].is_dir() else shutil.copy)(side["peer_file"], copy)
    arguments = {"file": str(copy), "images": [str(image) for image in images], "imgsz": IMG_SIZE, "conf": CONF,
                 "iou": IOU, "threads": threads, "warmup": WARMUP_IMAGES}
    environment = venvs.peer_environment(os.environ, {"YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "False",
                                                      "YOLO_CONFIG_DIR": str(work / "ultralytics-config")})
    done = subprocess.run([str(python), str(venvs.DRIVERS / "run_ultralytics_predict.py"), json.dumps(arguments)],
                          capture_output=True, text=True, cwd=work, env=environment, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("PEER ")]
    if done.returncode != 0 or not lines:
        raise FailedRun(f"the peer failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1][len("PEER "):])


def run_detbench(side: dict, images: Path, work: Path, run_id: str, threads: int, timeout: int) -> dict:
    sets = [f"model.file={side['file']}", f"dataset.path={images}", "dataset.batch_size=1",
            f"runtime.backend={side['backend']}", f"runtime.precision={side['precision']}",
            f"runtime.threads={threads}",
            f"postprocess.conf_thres={CONF}", f"postprocess.iou_thres={IOU}", "benchmark.repeats=1",
            "benchmark.layer_timing=false", "benchmark.profiler=false", "benchmark.accuracy.enabled=false",
            "benchmark.agreement.enabled=false", "outputs.save_images=false", "outputs.plots=false",
            "outputs.report=false", f"run.output_dir={work / 'runs'}", f"run.id={run_id}"]
    command = benchmark_command(ROOT / "configs" / "files.yaml", sets)
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    if done.returncode != 0:
        raise FailedRun(f"detbench failed (exit {done.returncode}): {done.stderr[-2000:]}")
    summary = json.loads((work / "runs" / run_id / "summary.json").read_text())
    steps, timed = summary["steps"], summary["images_timed"]
    row = {"forward": summary["forward"]["p50_ms_per_image"],
           "undecoded": undecoded_ms_per_image(summary),
           "pipeline": steps["pipeline"]["total_ms"] / timed,
           "preprocess": steps["preprocess"]["p50_ms"], "postprocess": steps["postprocess"]["p50_ms"],
           "ran": summary["runtime"].get("inference_precision_hint") or summary["runtime"]["precision"],
           "spinning": summary["runtime"].get("allow_spinning")}
    shutil.rmtree(work / "runs" / run_id, ignore_errors=True)
    return row


def quoted(values: list[float]) -> str:
    interval = median_confidence_interval(values, GOAL_INTERVAL)
    middle = statistics.median(values)
    if interval:
        return f"x{middle:.3f} [{GOAL_INTERVAL:.0%} interval {interval[0]:.3f}-{interval[1]:.3f}]"
    return f"x{middle:.3f} (range {min(values):.3f}-{max(values):.3f} over {len(values)} round(s))"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; an interval needs 5")
    parser.add_argument("--images", type=int, default=200, help="the first N scenes, sorted by name")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sides", nargs="*", default=["onnx", "openvino"], choices=["onnx", "openvino"])
    parser.add_argument("--peer-venv", type=Path, default=venvs.PEERS_HOME / venvs.ULTRALYTICS.name)
    parser.add_argument("--ultra", type=Path, default=ROOT.parent / "shared" / "data" / "ultra")
    parser.add_argument("--shapes", type=Path, default=ROOT.parent / "shared" / "data" / "shapes")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds for one run of either side")
    args = parser.parse_args()
    python = venvs.existing_venv(args.peer_venv.expanduser(), "benchmarks/peers/ultralytics_benchmark.py (with "
                                 "ultralytics, onnxruntime and openvino)")
    model_name, flags = cpu_model(), flags_among(CPU_FLAGS)
    work = Path(tempfile.mkdtemp(prefix="detbench-ultralytics-predict-"))
    images = sorted(p for p in (args.shapes / "images").iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    images = images[:args.images]
    chosen = work / "images"
    chosen.mkdir()
    for image in images:  # the same scenes for detbench, which reads a folder
        (chosen / image.name).symlink_to(image.resolve())
    every = sides(args.ultra, any(flag in flags for flag in BF16_FLAGS))
    print(f"CPU {model_name}; flags {' '.join(flags)}; {os.cpu_count()} cores; {len(images)} scenes, batch 1, "
          f"{args.threads} threads, conf {CONF}, IoU {IOU}; work folder {work}", flush=True)
    for name in args.sides:
        side = every[name]
        rows: list[tuple[dict, dict]] = []
        for number in range(args.rounds):
            outcome: dict[str, dict] = {}
            order = alternated(("peer", "detbench"), number)
            for who in order:
                outcome[who] = (run_peer(python, side, images, work, args.threads, args.timeout) if who == "peer"
                                else run_detbench(side, chosen, work, f"{name}-{number}", args.threads, args.timeout))
            peer, ours = outcome["peer"], outcome["detbench"]
            rows.append((peer, ours))
            print(f"{name} round {number + 1} ({' first, '.join(order)} second; load {os.getloadavg()[0]:.1f}): peer "
                  f"inference {peer['inference']:.2f}, pre+inf+post {peer['whole']:.2f}, wall "
                  f"{peer['wall_ms_per_image']:.2f} ms/image; detbench forward {ours['forward']:.2f}, without "
                  f"decoding {ours['undecoded']:.2f}, "
                  f"pipeline {ours['pipeline']:.2f} ms/image ({ours['ran']}, spinning {ours['spinning']}); medians: peer "
                  f"preprocess {peer['preprocess']:.2f}, postprocess {peer['postprocess']:.2f}, detbench preprocess "
                  f"{ours['preprocess']:.2f}, postprocess {ours['postprocess']:.2f}", flush=True)
        print(f"{name}: {side['file'].name}, detbench {side['backend']} {side['precision']}; peer over detbench "
              f"(above 1: detbench faster):")
        print(f"  forward: peer inference / detbench forward p50 "
              f"{quoted([peer['inference'] / ours['forward'] for peer, ours in rows])}")
        print(f"  whole loop without image reading: peer pre+inference+post / detbench pipeline without decoding "
              f"{quoted([peer['whole'] / ours['undecoded'] for peer, ours in rows])}")
        print(f"  whole loop with image reading: peer wall / detbench pipeline "
              f"{quoted([peer['wall_ms_per_image'] / ours['pipeline'] for peer, ours in rows])}")
    print(f"work folder: {work}")
    return 0


if __name__ == "__main__":
    sys.exit(command_status(main))
