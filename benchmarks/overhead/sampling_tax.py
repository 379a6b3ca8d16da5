"""The sampling tax: how much slower the pipeline runs while py-spy samples it with native frames
(profiling.sampler: py-spy), measured apart from any run.

    .venv/bin/python benchmarks/overhead/sampling_tax.py --arch yolov7-tiny --img-size 320 --rounds 15 --rates 10

One process, one pipeline (preprocess, forward, postprocess over a fixed batch of the bundled photos, each step
timed as the harness times it), with the recorders a run keeps alive during its timed passes (the memory sampler's
thread), since py-spy stops and unwinds every thread of the process at each sample. For each rate py-spy is
started once, as a run starts it (attached, its clock mark and its settling done: a run pays the symbol loading
before its timed passes, not in them). Then every round runs three blocks of batches (about --block-s seconds
each) in an order rotated from round to round: sampled, bare (py-spy paused with SIGSTOP, never while it holds the
process still) and bare again, each after --settle-s of untimed batches (resumed, py-spy first takes the samples
it missed while paused, back to back). A ratio is the median over rounds of (block median / bare median of the same
round); "bare, again" against bare is the noise floor. Goal: the default rate's ratio at most 1.03.

Each sampled block also reports py-spy's CPU time over the block's wall time: a native sample holds the process
still while py-spy reads and unwinds its threads, so that share bounds the share of the time the pipeline stood
still, which the ratios cannot resolve when the machine drifts more than the tax between blocks.
"""
from __future__ import annotations

import argparse
import itertools
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

os.environ.setdefault("KINETO_LOG_LEVEL", "5")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

from benchmarks.common.arguments import model_arguments  # noqa: E402
from benchmarks.common.rounds import rotated  # noqa: E402
from datasets.image_folder import decode_image, find_images  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.torch.session import TorchEager  # noqa: E402
from utils.config.schema import ProfilingSection, config_for  # noqa: E402
from utils.measure.steps.timed_batch import run_stages  # noqa: E402
from utils.record.steps import PIPELINE_STEP  # noqa: E402
from utils.measure.contention.recorder import ContentionRecorder  # noqa: E402
from utils.measure.memory.recorder import MemorySampler  # noqa: E402
from utils.measure.below_layer.sampler import PySpySampler  # noqa: E402
from utils.measure.steps.step_timer import StepTimer  # noqa: E402

GOAL = 0.03
SAMPLED, BARE, NOISE_CONTROL = "sampled", "bare", "bare, again"
PAUSE_TRIES = 200


def block(stages, images, seconds: float, estimate_s: float, listeners: list) -> list[float]:
    """Per-batch milliseconds of one block, timed as the harness's pipeline step."""
    timer = StepTimer(list(listeners))
    for _ in range(max(3, round(seconds / max(estimate_s, 1e-3)))):
        with timer.step(PIPELINE_STEP):
            run_stages(stages, timer, images)
    return [record.ms for record in timer.records if record.step == PIPELINE_STEP]


def held_still(pid: int) -> bool:
    """Whether a thread of `pid` is in a tracing stop (py-spy holds it still while it reads a sample)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in (b"t", b"T"):
            return True
    return False


def pause(spy: int) -> None:
    """SIGSTOP py-spy between samples: stopped mid-sample it would leave this process held still."""
    for _ in range(PAUSE_TRIES):
        os.kill(spy, signal.SIGSTOP)
        time.sleep(0.002)
        if not held_still(os.getpid()):
            return
        os.kill(spy, signal.SIGCONT)
        time.sleep(0.001)
    sys.exit("py-spy could not be paused between two samples")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    model_arguments(parser, arch="yolov7-tiny", img_size=320, rounds=15)
    parser.add_argument("--block-s", type=float, default=3.0)
    parser.add_argument("--settle-s", type=float, default=1.0, help="untimed batches before every block")
    parser.add_argument("--rates", default=str(ProfilingSection().rate),
                        help="comma-separated sampling rates (Hz); the first is judged against the goal")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()

    family = family_for(args.arch)
    config = config_for(args.arch, preprocess={"img_size": args.img_size})
    preprocess, postprocess = config.preprocess, config.postprocess
    network = family.load_network(args.arch, None, 0)
    runtime = TorchEager(threads=args.threads)
    pipeline = family.build_pipeline(network, runtime.prepare(network, family.example_input(preprocess)),
                                     preprocess, postprocess)
    paths = find_images(str(PROJECT_ROOT / "datasets" / "samples"))
    images = [decode_image(path).image for path in itertools.islice(itertools.cycle(paths), args.batch)]
    stages = pipeline.stages()
    rates = [int(rate) for rate in args.rates.split(",")]
    load_start = os.getloadavg()
    lines = []
    with tempfile.TemporaryDirectory() as scratch, MemorySampler() as memory:
        listeners = [memory]
        for _ in range(3):
            block(stages, images, 0, 1, listeners)
        estimate_s = min(block(stages, images, 0, 1, listeners)) / 1e3
        threads = len(os.listdir(f"/proc/{os.getpid()}/task"))
        for rate in rates:
            sampler = PySpySampler(rate, Path(scratch) / str(rate))
            failed = sampler.start()
            if failed is not None:
                sys.exit(f"py-spy could not sample: {failed.reason}")
            spy = psutil.Process(sampler.process.pid)
            medians = {name: [] for name in (SAMPLED, BARE, NOISE_CONTROL)}
            shares, others = [], []
            names = list(medians)
            for round_index in range(args.rounds):
                for name in rotated(names, round_index):
                    if name == SAMPLED:
                        os.kill(spy.pid, signal.SIGCONT)
                    else:
                        pause(spy.pid)
                    # Resumed after a pause, py-spy takes the samples it missed back to back: untimed.
                    block(stages, images, args.settle_s, estimate_s, listeners)
                    spy_cpu, began = sum(spy.cpu_times()[:2]), time.perf_counter()
                    with ContentionRecorder() as contention:
                        times = block(stages, images, args.block_s, estimate_s, listeners)
                    if name == SAMPLED:
                        shares.append((sum(spy.cpu_times()[:2]) - spy_cpu) / (time.perf_counter() - began))
                    summary = contention.summary()
                    if summary.get("status") == "measured":
                        others.append(summary["other_processes_cpu_share"])
                    medians[name].append(statistics.median(times))
                print(f"{rate} Hz, round {round_index + 1}: "
                      + ", ".join(f"{name} {medians[name][-1]:.1f} ms" for name in names), flush=True)
            os.kill(spy.pid, signal.SIGCONT)
            result = sampler.stop()
            if result.status != "measured":
                sys.exit(f"py-spy failed: {result.reason}")
            ratio = statistics.median(s / b for s, b in zip(medians[SAMPLED], medians[BARE]))
            noise = statistics.median(s / b for s, b in zip(medians[NOISE_CONTROL], medians[BARE]))
            lines.append((rate, statistics.median(medians[BARE]), statistics.median(medians[SAMPLED]), ratio, noise,
                          statistics.median(shares), result.samples, result.behind_s,
                          statistics.median(others) if others else float("nan")))
    load_end = os.getloadavg()
    print(f"\n{args.arch} at {args.img_size}, batch {args.batch}, {threads} threads in the process, {args.rounds} "
          f"interleaved rounds of {args.block_s:g} s per block; load average {load_start[0]:.2f} -> {load_end[0]:.2f}")
    print(f"{'rate':>6} {'bare ms':>9} {'sampled ms':>11} {'x bare':>8} {'noise floor':>12} {'py-spy CPU':>11} "
          f"{'samples':>8} {'others':>7}")
    for rate, bare, sampled, ratio, noise, share, samples, behind, others in lines:
        print(f"{rate:>4} Hz {bare:9.2f} {sampled:11.2f} {ratio:8.3f} {noise:12.3f} {share:11.1%} {samples:>8} "
              f"{others:7.0%}" + (f"  (fell {behind:g} s behind)" if behind else ""))
    rate, _, _, ratio, noise, share, *_ = lines[0]
    verdict = "met" if ratio - 1 <= GOAL else "NOT met"
    print(f"goal: {rate} Hz within {GOAL:.0%} of bare: x{ratio:.3f}, {verdict} (noise floor x{noise:.3f}; py-spy "
          f"held the process for at most {share:.1%} of the time)")


if __name__ == "__main__":
    main()
