"""Does a run time the same as a process's second run as alone? tune runs the batch sizes of one way of
computing in one process (utils/commands/tune/shared_runs.py); this says whether that changes what they time.

    .venv/bin/python benchmarks/overhead/shared_process.py [--runtimes onnxruntime,openvino,torch] [--pairs 5]
        [--batch 4] [--first-batch 2] [--threads 2] [--set KEY=VALUE ...]

For each runtime, --pairs pairs of processes, in alternating order: "alone" is `benchmark.py` running batch
--batch in a process of its own; "shared" is `benchmark.py runs` (tune's own command) running batch
--first-batch and then batch --batch in one process, the second run compared. Every run is yolov7-tiny at 320 on
the bundled photos (configs/samples_tiny.yaml) with 5 timed passes, no accuracy pass and no per-layer pass. Prints
each pair's pipeline and forward p50 per image, their shared/alone ratios and the median ratio with its lowest and
highest pair, and each way's wall seconds. Figures measured so far: benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.detbench_runs import as_sets  # noqa: E402
from benchmarks.common.rounds import alternated  # noqa: E402
COMMON = ["benchmark.accuracy.enabled=false", "benchmark.layer_timing=false", "benchmark.repeats=5",
          "outputs.plots=false", "outputs.save_images=false", "outputs.report=false"]


def arguments(runtime: str, batch: int, threads: int, extra: list[str], run_id: str) -> list[str]:
    sets = [*COMMON, f"runtime.backend={runtime}", f"runtime.threads={threads}", f"dataset.batch_size={batch}",
            *extra, f"run.id={run_id}"]
    return ["--config", str(ROOT / "configs" / "samples_tiny.yaml"), *as_sets(sets)]


def p50_per_image(run_dir: Path) -> dict[str, float]:
    steps = pd.read_csv(run_dir / "steps_timer.csv")
    timed = steps[steps["pass_kind"] == "timed"]
    return {step: float((timed[timed["step"] == step]["ms"] / timed[timed["step"] == step]["images"]).median())
            for step in ("pipeline", "forward")}


def launch(command: list[str], output_dir: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), *command, "--set",
                           f"run.output_dir={output_dir}"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"a run failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return time.perf_counter() - started


def alone(runtime: str, args: argparse.Namespace, folder: Path, name: str) -> tuple[dict[str, float], float]:
    seconds = launch(arguments(runtime, args.batch, args.threads, args.set, name), folder)
    return p50_per_image(folder / name), seconds


def shared(runtime: str, args: argparse.Namespace, folder: Path, name: str) -> tuple[dict[str, float], float]:
    spec = [[f"{name}-first", arguments(runtime, args.first_batch, args.threads, args.set, f"{name}-first")],
            [name, arguments(runtime, args.batch, args.threads, args.set, name)]]
    seconds = launch(["runs", json.dumps(spec)], folder)
    return p50_per_image(folder / name), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default="onnxruntime,openvino,torch")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--first-batch", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="shared_process_"))
    args.set.append(f"runtime.cache_dir={folder / 'cache'}")
    print(f"batch {args.batch} (shared: after batch {args.first_batch}), {args.threads} thread(s), {args.pairs} pairs; "
          f"runs under {folder}")
    for runtime in args.runtimes.split(","):
        launch(arguments(runtime, args.batch, args.threads, args.set, f"{runtime}-export"), folder)  # the export
        ratios: dict[str, list[float]] = {"pipeline": [], "forward": []}
        walls: dict[str, list[float]] = {"alone": [], "shared": []}
        for pair in range(args.pairs):
            ways = [("alone", alone), ("shared", shared)]
            figures = {}
            for way, run in alternated(ways, pair):
                figures[way], seconds = run(runtime, args, folder, f"{runtime}-{way}-{pair}")
                walls[way].append(seconds)
            for step in ratios:
                ratios[step].append(figures["shared"][step] / figures["alone"][step])
            print(f"{runtime} pair {pair + 1}: pipeline {figures['shared']['pipeline']:.2f}/"
                  f"{figures['alone']['pipeline']:.2f} ms/image (shared/alone), forward "
                  f"{figures['shared']['forward']:.2f}/{figures['alone']['forward']:.2f}", flush=True)
        for step, values in ratios.items():
            print(f"{runtime} {step}: shared/alone x{statistics.median(values):.3f} "
                  f"[{min(values):.3f}, {max(values):.3f}]")
        print(f"{runtime} wall: alone {statistics.median(walls['alone']):.1f} s per process of one run, shared "
              f"{statistics.median(walls['shared']):.1f} s per process of two")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
