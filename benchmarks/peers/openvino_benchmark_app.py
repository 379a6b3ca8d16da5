"""detbench on OpenVINO fp32 against OpenVINO's own benchmark_app, on the same ONNX file and thread count.

    .venv/bin/python benchmarks/peers/openvino_benchmark_app.py [--rounds 3] [--threads 2] [--arch yolov7-tiny]
        [--seconds 15]

Three questions, each against the peer that answers it:
  - throughput at equal settings: detbench's offline scenario (MLPerf LoadGen drives the whole pipeline:
    letterbox, forward, NMS, boxes back; runtime.streams auto = the throughput hint's own choice) against
    `benchmark_app -hint throughput`, both f32. Goal: at least 0.95x its FPS. The ratio splits in two: the whole
    pipeline against the streams' forward alone in the same run (summary.json scenario.forward_bound), and that
    forward against benchmark_app's inference. Both sides feed the model u8 pixels, converted to f32 inside the
    compiled model (benchmark_app's default for an image input; detbench's runtime.input_precision auto); a
    third run in the same rounds has detbench convert them itself (runtime.input_precision f32), the way it ran
    before, and prints what the u8 input is worth.
  - with defaults: detbench offline as a user runs it (runtime.precision and runtime.streams left alone)
    against benchmark_app -hint throughput left to choose its precision; then detbench with the choice its
    console names (OpenVINO's own precision and streams auto) against the same.
  - latency: detbench's single_stream passes (images/s of the whole pipeline, decoding included; of the
    pipeline without the decoding; of the forward alone) against `benchmark_app -hint latency`. Goal: at
    least 0.9x its FPS.
benchmark_app (installed with the openvino package, run from this venv's bin) times inference alone on random
input of one fixed shape; detbench runs the bundled photos letterboxed to the same square shape
(preprocess.rect false), so both sides run the same input shape. The ONNX file is the one detbench exported
and cached (summary.json runtime.onnx_file), given to benchmark_app as it is (-shape fixes its dynamic axes).
Rounds interleave the runs in pairs (benchmark_app and detbench at the same settings), detbench first in every
other round, so neither side always runs right after the other's exit; every figure is the median over rounds
of the per-round ratio, printed with its 90% interval over the rounds; a goal is met or missed only when that
interval lies wholly on one side of it, otherwise not resolved. --skip-defaults and --skip-f32-input leave a round
with the equal-settings pair alone, so more rounds fit in the same time (from 8 rounds on, the interval no longer
reaches the lowest and the highest round). Prints its figures; a measurement, never a test.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.common.detbench_runs import benchmark_command, undecoded_ms_per_image  # noqa: E402
from benchmarks.common.rounds import alternated  # noqa: E402
from utils.core.errors import FailedRun, command_status  # noqa: E402
from utils.record.statistics import GOAL_INTERVAL as INTERVAL, judge_against, median_confidence_interval  # noqa: E402

BENCHMARK_APP = Path(sys.executable).parent / "benchmark_app"
GOAL = 0.9
OFFLINE_GOAL = 0.95


def benchmark_app_command(onnx: Path, hint: str, threads_config: Path, img_size: int, seconds: int,
                          precision: Optional[str] = "f32") -> list[str]:
    """benchmark_app refuses -nthreads beside -hint (a rule of its command line, not of OpenVINO): the thread
    count goes in through -load_config. precision None: the plugin's own choice."""
    return [str(BENCHMARK_APP), "-m", str(onnx), "-d", "CPU", "-hint", hint, "-load_config", str(threads_config),
            "-shape", f"[1,3,{img_size},{img_size}]", "-t", str(seconds)] + (
        ["-infer_precision", precision] if precision else [])


def parse_benchmark_app(text: str) -> tuple[Optional[float], Optional[int]]:
    """(FPS, the streams it ran) from benchmark_app's console output."""
    fps = re.search(r"Throughput:\s+([\d.]+)\s*FPS", text)
    streams = re.search(r"NUM_STREAMS:\s*(\d+)", text)
    return (float(fps.group(1)) if fps else None), (int(streams.group(1)) if streams else None)


def detbench_command(args: argparse.Namespace, out: Path, run_id: str, scenario: str, streams,
                     precision: Optional[str] = "fp32", extra: tuple[str, ...] = ()) -> list[str]:
    """streams or precision None: left to detbench's defaults; `extra`: further --set items."""
    sets = [f"model.arch={args.arch}", f"preprocess.img_size={args.img_size}", "preprocess.rect=false",
            f"dataset.path={args.images}", "dataset.batch_size=1", "runtime.backend=openvino",
            f"runtime.threads={args.threads}",
            *([f"runtime.precision={precision}"] if precision else []),
            *([f"runtime.streams={streams}"] if streams is not None else []),
            "benchmark.layer_timing=false", "benchmark.profiler=false", "benchmark.agreement.enabled=false",
            "outputs.plots=false", "outputs.save_images=false", "outputs.report=false",
            f"run.output_dir={out}", f"run.id={run_id}", f"benchmark.scenario={scenario}", *extra]
    if scenario == "offline":
        sets.append(f"benchmark.loadgen.min_duration_s={args.seconds}")
    else:
        sets.append(f"benchmark.min_time_s={args.seconds}")
    return benchmark_command(PROJECT_ROOT / "configs" / "samples.yaml", sets)


LOADS: dict[str, list[float]] = {}


def run(command: list[str], timeout: int, figure: str = "") -> str:
    result = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=timeout)
    if result.returncode != 0:
        raise FailedRun(f"failed (exit {result.returncode}): {' '.join(command[:4])} ...\n{result.stderr[-2000:]}")
    if figure:
        LOADS.setdefault(figure, []).append(os.getloadavg()[0])
    return result.stdout


def offline_rate(out: Path, run_id: str) -> tuple[float, dict]:
    summary = json.loads((out / run_id / "summary.json").read_text())
    return summary["scenario"]["result"]["samples_per_s"], summary["runtime"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--arch", default="yolov7-tiny")
    parser.add_argument("--img-size", type=int, default=640)
    parser.add_argument("--seconds", type=int, default=15, help="each run's measured time; default 15")
    parser.add_argument("--images", default=str(PROJECT_ROOT / "datasets" / "samples"))
    parser.add_argument("--output-dir", type=Path, default=None)
    parser.add_argument("--skip-latency", action="store_true", help="leave out the single_stream / -hint latency pair")
    # The equal-settings goal is judged on one pair; the other runs answer other questions. Leaving them out buys
    # rounds, and it is rounds that narrow the interval the goal is judged by.
    parser.add_argument("--skip-defaults", action="store_true",
                        help="leave out the runs each left to its defaults and detbench with the peer's choice")
    parser.add_argument("--skip-f32-input", action="store_true",
                        help="leave out detbench converting the pixels itself (runtime.input_precision f32)")
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
        offline_id, f32_input_id, default_id, choice_id, single_id = (
            f"r{index}-{name}" for name in ("offline", "offline-f32-input", "default", "peer-choice", "single"))

        def app_throughput() -> None:
            nonlocal streams
            row["app_throughput_fps"], streams = parse_benchmark_app(run(
                benchmark_app_command(onnx, "throughput", threads_config, args.img_size, args.seconds), timeout,
                "app_throughput_fps"))

        def offline() -> None:
            run(detbench_command(args, out, offline_id, "offline", "auto"), timeout, "offline_samples_per_s")
            row["offline_samples_per_s"], runtime = offline_rate(out, offline_id)
            row["offline_streams"] = runtime["streams"]
            summary = json.loads((out / offline_id / "summary.json").read_text())
            row["offline_valid"] = summary["scenario"]["result"]["valid"]
            bound = summary["scenario"].get("forward_bound") or {}
            row["offline_forward_per_s"] = bound.get("forward_samples_per_s")

        def offline_f32_input() -> None:
            run(detbench_command(args, out, f32_input_id, "offline", "auto", extra=("runtime.input_precision=f32",)),
                timeout, "offline_f32_input_samples_per_s")
            row["offline_f32_input_samples_per_s"], _ = offline_rate(out, f32_input_id)

        def app_default() -> None:
            row["app_default_fps"], _ = parse_benchmark_app(run(
                benchmark_app_command(onnx, "throughput", threads_config, args.img_size, args.seconds, None), timeout,
                "app_default_fps"))

        def detbench_default() -> None:
            run(detbench_command(args, out, default_id, "offline", None, None), timeout, "default_samples_per_s")
            row["default_samples_per_s"], runtime = offline_rate(out, default_id)
            peer = runtime.get("openvino_defaults") or {}
            chosen = {"f32": "fp32", "bf16": "bf16"}.get(peer.get("inference_precision"), "fp32")
            run(detbench_command(args, out, choice_id, "offline", "auto", chosen), timeout, "choice_samples_per_s")
            row["choice_samples_per_s"], _ = offline_rate(out, choice_id)
            row["peer_precision"] = peer.get("inference_precision")

        def app_latency() -> None:
            row["app_latency_fps"], _ = parse_benchmark_app(
                run(benchmark_app_command(onnx, "latency", threads_config, args.img_size, args.seconds), timeout,
                    "app_latency_fps"))

        def single_stream() -> None:
            run(detbench_command(args, out, single_id, "single_stream", 1), timeout, "single_images_per_s")
            single = json.loads((out / single_id / "summary.json").read_text())
            row["single_images_per_s"] = single["pipeline_latency"]["images_per_s"]
            row["single_undecoded_per_s"] = 1000.0 / undecoded_ms_per_image(single)
            forward_ms = single["forward"]["p50_ms_per_image"]
            row["single_forward_per_s"] = 1000.0 / forward_ms if forward_ms else None

        groups = [(app_throughput, offline) + (() if args.skip_f32_input else (offline_f32_input,))]
        if not args.skip_defaults:
            groups.append((app_default, detbench_default))
        if not args.skip_latency:
            groups.append((app_latency, single_stream))
        for group in groups:
            # Every other round detbench goes first, so neither side always runs right after the other's exit.
            for measure in alternated(group, index):
                measure()
        rows.append(row)
        print(f"round {index}: " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                              for k, v in row.items()), flush=True)

    def ratios(a: str, b: str) -> list[float]:
        return [r[a] / r[b] for r in rows if r.get(a) and r.get(b)]

    def medians(name: str) -> str:
        values = [r[name] for r in rows if r.get(name)]
        loads = LOADS.get(name, [])
        return (f"{statistics.median(values):.2f}" if values else "n/a") + \
            (f" (load average {min(loads):.1f}-{max(loads):.1f})" if loads else "")

    print(f"\nopenvino_benchmark_app: {args.arch} at {args.img_size}x{args.img_size}, {args.threads} threads, "
          f"{args.rounds} interleaved rounds of {args.seconds} s each side; ONNX {onnx}; benchmark_app chose {streams} stream(s) "
          f"for throughput; detbench's streams auto: {[r.get('offline_streams') for r in rows]}")
    for name in ("app_throughput_fps", "offline_samples_per_s", "offline_forward_per_s",
                 "offline_f32_input_samples_per_s", "app_default_fps",
                 "default_samples_per_s", "choice_samples_per_s", "app_latency_fps", "single_images_per_s"):
        if any(name in r for r in rows):  # runs a --skip flag left out have no line
            print(f"  {name}: median {medians(name)}")
    for name, a, b, what, goal in (
            ("offline (streams auto) / benchmark_app -hint throughput, f32", "offline_samples_per_s",
             "app_throughput_fps", "equal settings: whole pipeline under LoadGen", OFFLINE_GOAL),
            ("  of which: offline whole pipeline / its forward alone", "offline_samples_per_s",
             "offline_forward_per_s", "LoadGen's rate against the streams' forward rate in the same run", None),
            ("  of which: offline forward alone / benchmark_app -hint throughput", "offline_forward_per_s",
             "app_throughput_fps", "the streams' forward at the speed measured under LoadGen", None),
            ("offline with u8 input / with f32 input", "offline_samples_per_s", "offline_f32_input_samples_per_s",
             "runtime.input_precision auto (u8, OpenVINO converts) against f32 (the pipeline converts)", None),
            ("detbench defaults / benchmark_app defaults", "default_samples_per_s", "app_default_fps",
             "each left to its defaults", None),
            ("detbench with OpenVINO's choice / benchmark_app defaults", "choice_samples_per_s", "app_default_fps",
             f"the --set line detbench's console prints ({rows[0].get('peer_precision')}, streams auto)", None),
            ("single_stream / benchmark_app -hint latency", "single_images_per_s", "app_latency_fps",
             "whole pipeline, decoding included", GOAL),
            ("single_stream without decoding / benchmark_app -hint latency", "single_undecoded_per_s",
             "app_latency_fps", "letterbox + forward + NMS + boxes", GOAL),
            ("single_stream forward / benchmark_app -hint latency", "single_forward_per_s", "app_latency_fps",
             "forward p50 alone", GOAL)):
        values = ratios(a, b)
        if not values:
            continue
        value, interval = statistics.median(values), median_confidence_interval(values, INTERVAL)
        spread = (f"rounds' {INTERVAL:.0%} interval x{interval[0]:.3f}-{interval[1]:.3f}" if interval else
                  f"{len(values)} round(s): too few for an interval")
        verdict = "" if goal is None else \
            f"; goal >= {goal}x: {judge_against(value, interval, goal, higher_is_better=True)}"
        print(f"  {name}: x{value:.3f} ({what}; {spread}{verdict})")
    print(f"  offline LoadGen results valid: {[r['offline_valid'] for r in rows if 'offline_valid' in r]}; run "
          f"directories under {out}")


if __name__ == "__main__":
    sys.exit(command_status(main))
