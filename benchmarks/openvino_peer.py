"""detbench on OpenVINO fp32 against OpenVINO's own benchmark_app, on the same ONNX file and thread count.

    .venv/bin/python benchmarks/openvino_peer.py [--rounds 3] [--threads 2] [--arch yolov7-tiny] [--seconds 15]

Two questions, each against the peer that answers it:
  - throughput: detbench's offline scenario (MLPerf LoadGen drives the whole pipeline: letterbox, forward, NMS,
    boxes back; runtime.streams = the streams benchmark_app chose) against `benchmark_app -hint throughput`.
    Goal: at least 0.9x its FPS.
  - latency: detbench's single_stream passes (images/s of the whole pipeline, decoding included; of the
    pipeline without the decoding; of the forward alone) against `benchmark_app -hint latency`. Goal: at
    least 0.9x its FPS.
benchmark_app (installed with the openvino package, run from this venv's bin) times inference alone on random
input of one fixed shape; detbench runs the bundled photos letterboxed to the same square shape
(preprocess.rect false), so both sides run the same input shape. The ONNX file is the one detbench exported
and cached (summary.json runtime.onnx_file), given to benchmark_app as it is (-shape fixes its dynamic axes).
Rounds interleave the four runs; every figure is the median over rounds of the per-round ratio. Prints its
figures; a measurement, never a test.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from utils.errors import FailedRun, command_status  # noqa: E402

BENCHMARK_APP = Path(sys.executable).parent / "benchmark_app"
GOAL = 0.9


def benchmark_app_command(onnx: Path, hint: str, threads_config: Path, img_size: int, seconds: int) -> list[str]:
    """benchmark_app refuses -nthreads beside -hint (a rule of its command line, not of OpenVINO): the thread
    count goes in through -load_config."""
    return [str(BENCHMARK_APP), "-m", str(onnx), "-d", "CPU", "-hint", hint, "-load_config", str(threads_config),
            "-shape", f"[1,3,{img_size},{img_size}]", "-t", str(seconds), "-infer_precision", "f32"]


def parse_benchmark_app(text: str) -> tuple[Optional[float], Optional[int]]:
    """(FPS, the streams it ran) from benchmark_app's console output."""
    fps = re.search(r"Throughput:\s+([\d.]+)\s*FPS", text)
    streams = re.search(r"NUM_STREAMS:\s*(\d+)", text)
    return (float(fps.group(1)) if fps else None), (int(streams.group(1)) if streams else None)


def detbench_command(args: argparse.Namespace, out: Path, run_id: str, scenario: str, streams: int) -> list[str]:
    sets = [f"model.arch={args.arch}", f"preprocess.img_size={args.img_size}", "preprocess.rect=false",
            f"dataset.path={args.images}", "dataset.batch_size=1", "runtime.backend=openvino",
            "runtime.precision=fp32", f"runtime.threads={args.threads}", f"runtime.streams={streams}",
            "benchmark.layer_timing=false", "benchmark.profiler=false", "benchmark.agreement.enabled=false",
            "outputs.plots=false", "outputs.save_images=false", "outputs.report=false",
            f"run.output_dir={out}", f"run.id={run_id}", f"benchmark.scenario={scenario}"]
    if scenario == "offline":
        sets.append(f"benchmark.loadgen.min_duration_s={args.seconds}")
    else:
        sets.append(f"benchmark.min_time_s={args.seconds}")
    command = [sys.executable, str(PROJECT_ROOT / "benchmark.py"), "--config", str(PROJECT_ROOT / "configs" /
                                                                                       "samples.yaml")]
    for item in sets:
        command += ["--set", item]
    return command


def run(command: list[str], timeout: int) -> str:
    result = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=timeout)
    if result.returncode != 0:
        raise FailedRun(f"failed (exit {result.returncode}): {' '.join(command[:4])} ...\n{result.stderr[-2000:]}")
    return result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--arch", default="yolov7-tiny")
    parser.add_argument("--img-size", type=int, default=640)
    parser.add_argument("--seconds", type=int, default=15, help="each run's measured time; default 15")
    parser.add_argument("--images", default=str(PROJECT_ROOT / "datasets" / "samples"))
    parser.add_argument("--output-dir", type=Path, default=None)
    args = parser.parse_args()
    out = args.output_dir or Path(tempfile.mkdtemp(prefix="detbench-openvino-peer-"))
    timeout = 20 * args.seconds + 600
    out.mkdir(parents=True, exist_ok=True)
    threads_config = out / "benchmark_app_config.json"
    threads_config.write_text(json.dumps({"CPU": {"INFERENCE_NUM_THREADS": str(args.threads)}}))
    rows = []
    onnx: Optional[Path] = None
    streams = None
    for index in range(args.rounds):
        row: dict = {}
        if onnx is None:  # the first detbench run exports (and caches) the ONNX file both sides then run
            run(detbench_command(args, out, f"r{index}-export", "single_stream", 1), timeout)
            onnx = Path(json.loads((out / f"r{index}-export" / "summary.json").read_text())["runtime"]["onnx_file"])
        row["app_throughput_fps"], streams = parse_benchmark_app(
            run(benchmark_app_command(onnx, "throughput", threads_config, args.img_size, args.seconds), timeout))
        offline_id = f"r{index}-offline"
        run(detbench_command(args, out, offline_id, "offline", streams or 1), timeout)
        offline = json.loads((out / offline_id / "summary.json").read_text())
        row["offline_samples_per_s"] = offline["scenario"]["result"]["samples_per_s"]
        row["offline_valid"] = offline["scenario"]["result"]["valid"]
        row["app_latency_fps"], _ = parse_benchmark_app(
            run(benchmark_app_command(onnx, "latency", threads_config, args.img_size, args.seconds), timeout))
        single_id = f"r{index}-single"
        run(detbench_command(args, out, single_id, "single_stream", 1), timeout)
        single = json.loads((out / single_id / "summary.json").read_text())
        row["single_images_per_s"] = single["pipeline_latency"]["images_per_s"]
        steps = single["steps"]
        undecoded_ms = (steps["pipeline"]["total_ms"] - steps["load"]["total_ms"]) / single["images_timed"]
        row["single_undecoded_per_s"] = 1000.0 / undecoded_ms
        forward_ms = single["forward"]["p50_ms_per_image"]
        row["single_forward_per_s"] = 1000.0 / forward_ms if forward_ms else None
        rows.append(row)
        print(f"round {index}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                              for k, v in row.items()), flush=True)

    def ratio(a: str, b: str) -> Optional[float]:
        values = [r[a] / r[b] for r in rows if r.get(a) and r.get(b)]
        return statistics.median(values) if values else None

    offline_ratio = ratio("offline_samples_per_s", "app_throughput_fps")
    single_ratio = ratio("single_images_per_s", "app_latency_fps")
    undecoded_ratio = ratio("single_undecoded_per_s", "app_latency_fps")
    forward_ratio = ratio("single_forward_per_s", "app_latency_fps")
    print(f"\nopenvino_peer: {args.arch} at {args.img_size}x{args.img_size}, fp32, {args.threads} threads, "
          f"{args.rounds} interleaved rounds of {args.seconds} s each side; ONNX {onnx}; benchmark_app chose "
          f"{streams} stream(s) for throughput")
    for name, value, what in (
            ("offline / benchmark_app -hint throughput", offline_ratio, "whole pipeline under LoadGen"),
            ("single_stream / benchmark_app -hint latency", single_ratio, "whole pipeline, decoding included"),
            ("single_stream without decoding / benchmark_app -hint latency", undecoded_ratio,
             "letterbox + forward + NMS + boxes, the images' decoding left out as benchmark_app has none"),
            ("single_stream forward / benchmark_app -hint latency", forward_ratio, "forward p50 alone")):
        verdict = "n/a" if value is None else ("meets" if value >= GOAL else "misses")
        shown = "n/a" if value is None else f"x{value:.3f}"
        print(f"  {name}: {shown} ({what}; goal >= {GOAL}x: {verdict})")
    print(f"  offline LoadGen results valid: {[r['offline_valid'] for r in rows]}; run directories under {out}")


if __name__ == "__main__":
    sys.exit(command_status(main))
