"""The sampling tax: how much slower the pipeline runs while py-spy samples it with native frames
(profiling.sampler: py-spy), measured apart from any run.

    .venv/bin/python benchmarks/sampling_tax.py --arch yolov7-tiny --img-size 320 --rounds 5 --rates 100

One process, one pipeline (preprocess, forward, postprocess over a fixed batch of the bundled photos, each step
timed as the harness times it). Every round runs each configuration for a block of batches (about --block-s
seconds) in an order rotated from round to round; a sampled block starts py-spy as a run does (attached, its
clock mark and settling done) before its timing starts, and stops it after. A ratio is the median over rounds of
(configuration median / bare median of the same round). "bare, again" is the bare loop under another name: its
ratio is the noise floor. Goal: the default rate's ratio at most 1.03. The load average is printed with the
figures: on a shared machine py-spy waits for a core while it holds the process still, which inflates the tax.
Where the machine drifts more than the tax between blocks, the ratios cannot show it; so each sampled block also
reports py-spy's own CPU time over the block's wall time. A native sample holds the process still while py-spy
reads and unwinds its threads, so that share is about the share of the time the pipeline stood still.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

os.environ.setdefault("KINETO_LOG_LEVEL", "5")
PROJECT_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_ROOT))

from datasets.image_folder import decode_image, find_images  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.torch.session import TorchEager  # noqa: E402
from utils.config import PostprocessSection, PreprocessSection, ProfilingSection  # noqa: E402
from utils.harness.timed_batch import run_stages  # noqa: E402
from utils.record.steps import PIPELINE_STEP  # noqa: E402
from utils.recorders.contention import ContentionRecorder  # noqa: E402
from utils.recorders.sampler import PySpySampler  # noqa: E402
from utils.recorders.step_timer import StepTimer  # noqa: E402

GOAL = 0.03
NOISE_CONTROL = "bare, again"


def block(stages, images, seconds: float, estimate_s: float) -> list[float]:
    """Per-batch milliseconds of one block, timed as the harness's pipeline step."""
    timer = StepTimer()
    for _ in range(max(3, round(seconds / max(estimate_s, 1e-3)))):
        with timer.step(PIPELINE_STEP):
            run_stages(stages, timer, images)
    return [record.ms for record in timer.records if record.step == PIPELINE_STEP]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="yolov7-tiny")
    parser.add_argument("--img-size", type=int, default=320)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block-s", type=float, default=4.0)
    parser.add_argument("--rates", default=str(ProfilingSection().rate),
                        help="comma-separated sampling rates (Hz); the first is judged against the goal")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    family = family_for(args.arch)
    preprocess, postprocess = PreprocessSection(img_size=args.img_size), PostprocessSection()
    network = family.load_network(args.arch, None, 0)
    runtime = TorchEager(threads=args.threads)
    pipeline = family.build_pipeline(network, runtime.prepare(network, family.example_input(preprocess)),
                                     preprocess, postprocess)
    paths = find_images(str(PROJECT_ROOT / "datasets" / "samples"))
    images = [decode_image(path).image for path in itertools.islice(itertools.cycle(paths), args.batch)]
    stages = pipeline.stages()
    rates = [int(rate) for rate in args.rates.split(",")]
    configurations = ["bare"] + [f"py-spy --native {rate} Hz" for rate in rates] + [NOISE_CONTROL]
    for _ in range(3):
        block(stages, images, 0, 1)
    estimate_s = min(block(stages, images, 0, 1)) / 1e3
    load_start = os.getloadavg()
    medians: dict[str, list[float]] = {name: [] for name in configurations}
    others: list[float] = []
    behind: list[float] = []
    spy_share: dict[str, list[float]] = {name: [] for name in configurations}
    with tempfile.TemporaryDirectory() as scratch:
        for round_index in range(args.rounds):
            order = configurations[round_index % len(configurations):] + configurations[:round_index % len(configurations)]
            for name in order:
                sampler = None
                if name.startswith("py-spy"):
                    rate = int(name.split()[2])
                    sampler = PySpySampler(rate, Path(scratch) / f"{round_index}-{rate}")
                    failed = sampler.start()
                    if failed is not None:
                        sys.exit(f"py-spy could not sample: {failed.reason}")
                spy = psutil.Process(sampler.process.pid) if sampler is not None else None
                spy_cpu, began = (sum(spy.cpu_times()[:2]) if spy else 0.0), time.perf_counter()
                with ContentionRecorder() as contention:
                    times = block(stages, images, args.block_s, estimate_s)
                if spy is not None:
                    spy_share[name].append((sum(spy.cpu_times()[:2]) - spy_cpu) / (time.perf_counter() - began))
                if sampler is not None:
                    result = sampler.stop()
                    if result.status != "measured":
                        sys.exit(f"py-spy failed: {result.reason}")
                    behind.append(result.behind_s or 0.0)
                summary = contention.summary()
                if summary.get("status") == "measured":
                    others.append(summary["other_processes_cpu_share"])
                medians[name].append(statistics.median(times))
            print(f"round {round_index + 1}: " + ", ".join(f"{name} {medians[name][-1]:.1f} ms" for name in configurations),
                  flush=True)
    load_end = os.getloadavg()
    print(f"\n{args.arch} at {args.img_size}, batch {args.batch}, {args.rounds} interleaved rounds of "
          f"{args.block_s:g} s per configuration; load average {load_start[0]:.2f} -> {load_end[0]:.2f}; other "
          f"processes took a median {statistics.median(others) if others else float('nan'):.0%} of our cores")
    print(f"{'configuration':28} {'median ms/batch':>16} {'ratio to bare':>14} {'py-spy CPU share':>17}")
    for name in configurations:
        ratios = [value / bare for value, bare in zip(medians[name], medians["bare"])]
        share = f"{statistics.median(spy_share[name]):.1%}" if spy_share[name] else "-"
        print(f"{name:28} {statistics.median(medians[name]):16.2f} {statistics.median(ratios):14.3f} {share:>17}")
    judged = configurations[1]
    ratio = statistics.median(value / bare for value, bare in zip(medians[judged], medians["bare"]))
    noise = statistics.median(value / bare for value, bare in zip(medians[NOISE_CONTROL], medians["bare"]))
    print(f"py-spy fell behind its rate by up to {max(behind):.2f} s in a block" if behind else "")
    verdict = "met" if ratio - 1 <= GOAL else "NOT met"
    print(f"goal: {judged} within {GOAL:.0%} of bare: x{ratio:.3f}, {verdict} (noise floor x{noise:.3f})")


if __name__ == "__main__":
    main()
