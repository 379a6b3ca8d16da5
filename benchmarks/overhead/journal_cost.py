"""The journal's cost: how much slower the pipeline runs when every batch's steps are appended to steps_timer.csv
and its detections flushed as the batch ends (utils/measure/steps/journal.py), against the record kept in memory
until the run ends.

    .venv/bin/python benchmarks/overhead/journal_cost.py --rounds 9
        [--arch yolov7-tiny --img-size 320 --batches 30 --threads 1]

One process, one pipeline on seeded random weights, the bundled photos decoded once and handed to the harness's
own batch loop (utils.measure.steps.timed_batch.batch_loop with a StepTimer), batch 1. Each round runs three blocks of
--batches batches: "memory" (the steps in memory, the detections' rows written to a file without a flush, as
before the journal), "journal" (the timer's after_batch appends the batch's steps to steps_timer.csv, the
detections are flushed after each batch) and "memory, again", the first under another name: its ratio is the
noise floor. The blocks' order is rotated from round to round. A block's figure is its pipeline step's p50; a
ratio is a block's p50 over the memory block's of the same round; the median of the ratios over rounds, with its
90% interval (distribution-free), judges the goal: the journal's pipeline p50 at most x1.01 the memory one's. The
wall time per batch (the writing included, which runs outside the pipeline's timing) is printed beside it.
Figures measured so far: benchmarks/RESULTS.md.
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

os.environ.setdefault("KINETO_LOG_LEVEL", "5")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.common.rounds import rotated  # noqa: E402
from datasets.image_folder import decode_image, find_images  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.registry import build_runtime  # noqa: E402
from utils.config.schema import config_for  # noqa: E402
from utils.core.errors import command_status  # noqa: E402
from utils.measure.steps.timed_batch import PassPlace, batch_loop, run_stages  # noqa: E402
from utils.record.statistics import GOAL_INTERVAL, judge_against, median_confidence_interval  # noqa: E402
from utils.record.steps import PIPELINE_STEP, PassKind  # noqa: E402
from utils.measure.steps.step_timer import StepTimer  # noqa: E402
from utils.detections.writer import DetectionWriter  # noqa: E402
from utils.measure.steps.journal import StepJournal  # noqa: E402

GOAL = 1.01
BLOCKS = ("memory", "journal", "memory, again")


def block(pipeline, samples: list, batches: int, folder: Path, journal: bool) -> tuple[float, float]:
    """(pipeline p50 in ms, wall ms per batch) of one block of `batches` batches."""
    folder.mkdir()
    timer = StepTimer()
    writer = DetectionWriter(folder, folder, pipeline.class_names, save_images=False, note=None)
    steps = StepJournal(folder / "steps_timer.csv", timer.records, timer.origin_ns) if journal else None
    if steps is not None:
        timer.after_batch = steps.batch_ended
    stages = pipeline.stages()
    source = iter(itertools.cycle(samples))
    started = time.perf_counter()
    for result in batch_loop(source, range(batches), lambda images: run_stages(stages, timer, images), timer,
                             PassPlace(PassKind.TIMED)):
        writer.write_batch(result.valid, result.output)
        if journal:
            writer.flush()
    wall_ms = (time.perf_counter() - started) * 1e3 / batches
    writer.close()
    if steps is not None:
        steps.close()
    pipeline_ms = [r.ms for r in timer.records if r.step == PIPELINE_STEP]
    return statistics.median(pipeline_ms), wall_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="yolov7-tiny")
    parser.add_argument("--img-size", type=int, default=320)
    parser.add_argument("--images", default=str(PROJECT_ROOT / "datasets" / "samples"))
    parser.add_argument("--batches", type=int, default=30, help="batches per block")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1: a shared machine slows a team of threads at its every barrier)")
    args = parser.parse_args()

    family = family_for(args.arch)
    config = config_for(args.arch, preprocess={"img_size": args.img_size})
    network = family.load_network(args.arch, None, 0)
    runtime = build_runtime("torch", threads=args.threads)
    pipeline = family.build_pipeline(network, runtime.prepare(network, family.example_input(config.preprocess)),
                                     config.preprocess, config.postprocess)
    samples = [[decode_image(path)] for path in find_images(args.images)]
    p50s: dict[str, list[float]] = {name: [] for name in BLOCKS}
    walls: dict[str, list[float]] = {name: [] for name in BLOCKS}
    with tempfile.TemporaryDirectory() as scratch:
        block(pipeline, samples, 3, Path(scratch) / "warm-up", journal=True)
        for number in range(args.rounds):
            for name in rotated(BLOCKS, number):
                p50, wall = block(pipeline, samples, args.batches, Path(scratch) / f"{number}-{name}",
                                  journal=name == "journal")
                p50s[name].append(p50)
                walls[name].append(wall)
            print(f"round {number + 1}/{args.rounds}: " + ", ".join(
                f"{name} {p50s[name][-1]:.2f} ms" for name in BLOCKS), flush=True)
    print(f"\n{args.arch} at {args.img_size}, batch 1, {args.rounds} rounds of {args.batches} batches per block "
          f"({GOAL_INTERVAL:.0%} interval over rounds)")
    print(f"{'block':<14} {'pipeline p50 ms':>15} {'x memory':>9} {'interval':>17} {'wall ms/batch':>13}")
    verdict = None
    for name in BLOCKS:
        ratios = [value / base for value, base in zip(p50s[name], p50s["memory"])]
        ratio = statistics.median(ratios)
        interval = median_confidence_interval(ratios, GOAL_INTERVAL)
        shown = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "(too few rounds)"
        print(f"{name:<14} {statistics.median(p50s[name]):>15.2f} {ratio:>9.3f} {shown:>17} "
              f"{statistics.median(walls[name]):>13.2f}")
        if name == "journal":
            verdict = judge_against(ratio, interval, GOAL, higher_is_better=False)
    print(f"goal: the journal's pipeline p50 at most x{GOAL} the in-memory record's: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(command_status(main))
