"""The harness tax: how much slower the forward runs beside each recorder the harness runs, measured apart from
any run.

    .venv/bin/python benchmarks/overhead/harness_tax.py --arch yolov7-tiny --img-size 640 --rounds 10
        [--runtime openvino]

One process, the same torch threads throughout, one fixed preprocessed batch of the bundled photos. Every round
runs each configuration for a block of forwards (about --block-s seconds) right beside a bare block of its own
(the bare one first in every other round), the configurations in an order rotated from round to round; a ratio
is the median over rounds of (configuration median / the median of its bare block). With one bare block per
round instead, the machine's drift over a round lands in the ratios of the blocks run far from it: a recorder
alone can then read slower than the whole harness that holds it. Recorders are entered, and one
untimed forward run, before a block's timing starts: what they cost once per run is not a per-batch tax. A
contention recorder watches every block: a round counts for a configuration only when other processes took at most
--quiet-share (3%) of our cores during both its block and its bare one (on a shared 2-core machine they can slow a
2-thread forward several times over).

Per batch, "forward" is the forward call alone (what the harness's forward step measures) and "per batch" is
everything the loop does for the batch: the wait for (or, with workers=0, the decoding of) the next image, the
step bookkeeping and the forward. The step timer opens the runner's steps around every forward (pipeline, load,
the pipeline's stages and groups), the other stages doing no work. The CPU counters (profiling.counters, on by
default) read every thread's counters and /proc files as each batch starts and ends, and keep their perf events
open on every thread while the forward runs; the whole harness includes them, as a run does. "all, no images
fetched" is the whole harness with nothing decoded between forwards: its recorders' share of the tax, apart from
the decoding.

Prints one table (medians, and the mean forward's ratio, which periodic costs move more than the median) and the
goal for the whole harness as a run on this machine composes it (its loader workers are the run's own default
choice for these threads and cores): its median forward within 2% of bare for yolov7 and yolov7-tiny at 640.
"bare, again" is the bare loop under another name: its ratio is the noise floor, and a goal is judged only when
that floor is under half the goal. Each ratio has a 90% interval over the rounds (distribution-free, from 5
rounds); the goal is met when the whole harness's interval lies at or under it, missed when it lies above, and
otherwise not resolved: on a VM whose speed drifts between blocks, a median alone would call the goal whichever
way the drift fell. With --goal-only
a round runs only bare, "bare, again" and the whole harness, 4 blocks instead of 24: three times the rounds in about
half the time, and from 8 rounds on the interval no longer reaches the lowest and the highest round.

With --with-stages every block, the bare ones included, runs the pipeline's letterbox before each forward and its
NMS after, as a run does. Forwards back to back are a loop no pipeline runs, and on ONNX Runtime, whose idle pool
threads block, any pause between forwards slows the next, whatever fills it (seen on a VM that halts idle vCPUs
at once): back to back, that pause is charged to the harness. Figures measured so far: benchmarks/RESULTS.md.
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator

os.environ.setdefault("KINETO_LOG_LEVEL", "5")
PROJECT_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT_ROOT))

import torch  # noqa: E402
from memory_profiler import memory_usage  # noqa: E402

from benchmarks.common.arguments import model_arguments  # noqa: E402
from benchmarks.common.rounds import alternated, rotated  # noqa: E402
from datasets.image_folder import decode_image, find_images, image_loader  # noqa: E402
from pipelines.contract import FORWARD_STAGE  # noqa: E402
from pipelines.registry import family_for  # noqa: E402
from pipelines.runtimes.registry import build_runtime  # noqa: E402
from utils.config.schema import config_for  # noqa: E402
from utils.core.errors import command_status  # noqa: E402
from utils.preflight.cpu_budget import loader_workers, usable_cpus  # noqa: E402
from utils.scenarios.runner import shutdown_workers  # noqa: E402
from utils.measure.steps.timed_batch import run_stages  # noqa: E402
from utils.record.statistics import GOAL_INTERVAL as INTERVAL  # noqa: E402
from utils.record.statistics import NOT_RESOLVED, judge_against, median_confidence_interval  # noqa: E402
from utils.record.steps import LOAD_STEP, PIPELINE_STEP  # noqa: E402
from utils.measure.contention.recorder import ContentionRecorder, contention_verdict  # noqa: E402
from utils.measure.below_layer.cpu_counters import CpuCounters  # noqa: E402
from utils.measure.energy.recorder import EnergyRecorder, probe_rapl  # noqa: E402
from utils.measure.memory.recorder import MemorySampler  # noqa: E402
from utils.measure.steps.step_timer import StepTimer  # noqa: E402

GOALS = {("yolov7", 640): 0.02, ("yolov7-tiny", 640): 0.02}
MIN_QUIET_ROUNDS = 3  # fewer, and one burst of steal decides the verdict
# Bare again, as a configuration of its own: how far it lands from bare is the noise floor of every ratio.
NOISE_CONTROL = "bare, again"
# The whole harness without the loader: its recorders' tax apart from the decoding a run does between forwards.
RECORDERS_ALONE = "all, no images fetched"


class MemoryProfilerSampler:
    """The memory sampler before /proc reads replaced it, for comparison: memory_profiler listing and reading
    every child process every 50 ms."""

    def __init__(self, interval_s: float = 0.05):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self.interval_s):
            memory_usage(os.getpid(), interval=0, multiprocess=True)

    def __enter__(self) -> MemoryProfilerSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()


def fake_powercap(folder: Path) -> Path:
    """One package zone whose counter never moves: pyJoules reads it like the real one."""
    zone = folder / "intel-rapl" / "intel-rapl:0"
    zone.mkdir(parents=True)
    (zone / "name").write_text("package-0\n")
    (zone / "energy_uj").write_text("1000000\n")
    (zone / "max_energy_range_uj").write_text("262143328850\n")
    return folder


@dataclass
class Block:
    """What a configuration enters around a block of forwards."""

    recorders: list = field(default_factory=list)  # context managers
    listeners: list | None = None  # None: no step timer; a list (maybe empty): the runner's steps
    batches: Iterator | None = None  # a live loader to take one batch from before every forward


@dataclass
class BlockResult:
    forward_ms: list[float]
    batch_ms: list[float]
    neighbours_share: float | None  # other processes' (and steal's) share of our cores; None when unknown

    def quiet(self, threshold: float) -> bool:
        return self.neighbours_share is None or self.neighbours_share <= threshold


class Bench:
    """`images`: with --with-stages, the decoded images every batch's stages run on; None: only the forward works,
    on one fixed preprocessed batch."""

    def __init__(self, forward: Callable[[], object], stages, energy: EnergyRecorder,
                 loaders: dict[int, Iterator], images: list | None = None):
        self.forward = forward
        self.stages = stages
        self.energy = energy
        self.loaders = loaders
        self.images = images
        self.samplers: list[MemorySampler] = []

    def configurations(self) -> dict[str, Callable[[], Block]]:
        def new_sampler() -> MemorySampler:
            self.samplers.append(MemorySampler())
            return self.samplers[-1]

        def counted() -> Block:
            counters = CpuCounters()
            return Block([counters], [counters])

        def whole(workers: int | None) -> Block:
            # What a run composes by default: profiling.counters is on, py-spy and ITT tasks are not. workers None:
            # no image fetched between forwards, so the recorders' share of the whole harness shows apart.
            memory, counters = new_sampler(), CpuCounters()
            return Block([ContentionRecorder(), memory, counters], [self.energy, memory, counters],
                         None if workers is None else self.loaders[workers])

        return {
            "bare": Block,
            NOISE_CONTROL: Block,
            "memory_profiler sampler (old)": lambda: Block([MemoryProfilerSampler()]),
            "memory sampler (new)": lambda: Block([new_sampler()]),
            "step timer": lambda: Block(listeners=[]),
            "energy at step boundaries": lambda: Block(listeners=[self.energy]),
            "cpu counters around batches": counted,
            "loader, workers=1": lambda: Block(batches=self.loaders[1]),
            "loader, workers=0": lambda: Block(batches=self.loaders[0]),
            "all (old memory), workers=1": lambda: Block([MemoryProfilerSampler()], [self.energy], self.loaders[1]),
            "all, workers=1": lambda: whole(1),
            "all, workers=0": lambda: whole(0),
            RECORDERS_ALONE: lambda: whole(None),
        }

    def _stages(self, timer: StepTimer | None) -> float:
        """The pipeline's stages and groups, opened by the runner's own code when there is a timer; only the forward
        works unless the bench has images. Returns the forward's milliseconds."""
        forward_ns = []

        def timed(run: Callable[[object], object]) -> Callable[[object], object]:
            def forward(value):
                start = time.perf_counter_ns()
                value = run(value)
                forward_ns.append(time.perf_counter_ns() - start)
                return value
            return forward

        if self.images is None:
            stages = [replace(stage, run=timed(lambda value: self.forward()) if stage.name == FORWARD_STAGE
                              else lambda value: value) for stage in self.stages]
        else:
            stages = [replace(stage, run=timed(stage.run)) if stage.name == FORWARD_STAGE else stage
                      for stage in self.stages]
        if timer is None:
            value: object = self.images
            for stage in stages:
                value = stage.run(value)
        else:
            run_stages(stages, timer, self.images)
        return forward_ns[0] / 1e6

    def one_batch(self, block: Block, timer: StepTimer | None) -> tuple[float, float]:
        """(forward ms, per-batch ms)."""
        start = time.perf_counter_ns()
        if timer is None:
            if block.batches is not None:
                next(block.batches)
            if self.images is None:
                forward_start = time.perf_counter_ns()
                self.forward()
                forward_ms = (time.perf_counter_ns() - forward_start) / 1e6
            else:
                forward_ms = self._stages(None)
        else:
            with timer.step(PIPELINE_STEP):
                with timer.step(LOAD_STEP):
                    if block.batches is not None:
                        next(block.batches)
                forward_ms = self._stages(timer)
        return forward_ms, (time.perf_counter_ns() - start) / 1e6

    def run_block(self, make: Callable[[], Block], forwards: int) -> BlockResult:
        block = make()
        with ContentionRecorder() as neighbours, ExitStack() as stack:
            for recorder in block.recorders:
                stack.enter_context(recorder)
            timer = StepTimer(block.listeners) if block.listeners is not None else None
            self.one_batch(block, timer)
            timings = [self.one_batch(block, timer) for _ in range(forwards)]
        contention = neighbours.summary()
        share = (contention["other_processes_cpu_share"] + (contention["steal_share"] or 0.0)
                 if contention["status"] == "measured" else None)
        return BlockResult([f for f, _ in timings], [b for _, b in timings], share)


@contextmanager
def loaders(paths: list[Path], batch: int) -> Iterator[dict[int, Iterator]]:
    """Endless batches for workers=1 and workers=0; the worker is forked and fed before any timing."""
    made = {workers: image_loader(paths * 10_000, batch, workers) for workers in (1, 0)}
    batches = {workers: iter(loader) for workers, loader in made.items()}
    try:
        for iterator in batches.values():
            next(iterator)
        yield batches
    finally:
        for loader in made.values():
            shutdown_workers(loader)


def kept_rounds(mine: list[BlockResult], bare: list[BlockResult], threshold: float) -> tuple[list[int], bool]:
    """The rounds where this configuration's block and its bare block were both quiet, and whether there were any
    (if not, every round, contended as they are)."""
    quiet = [index for index, (block, beside) in enumerate(zip(mine, bare))
             if block.quiet(threshold) and beside.quiet(threshold)]
    return (quiet, True) if quiet else (list(range(len(mine))), False)


def round_ratios(mine: list[BlockResult], bare: list[BlockResult], rounds: list[int], field: str,
                 average=statistics.median) -> list[float]:
    """Per round, this configuration's average over that of the bare block beside it."""
    return [average(getattr(mine[index], field)) / average(getattr(bare[index], field)) for index in rounds]


def ratio(mine: list[BlockResult], bare: list[BlockResult], rounds: list[int], field: str,
          average=statistics.median) -> float:
    """Median over the rounds of this configuration's average over that of the bare block beside it."""
    return statistics.median(round_ratios(mine, bare, rounds, field, average))


def judge_goal(median: float, interval: tuple[float, float] | None, goal: float) -> str:
    """The whole harness's forward ratio against 1 + goal, in words: judged by the rounds' interval (on a machine
    whose speed drifts by more than the goal between blocks, a median alone reads whichever way the drift fell)."""
    limit = 1 + goal
    verdict = judge_against(median, interval, limit, higher_is_better=False)
    if interval is None:
        return f"{verdict} (the median alone: too few rounds for an interval)"
    if verdict == NOT_RESOLVED:
        return (f"{verdict} (the rounds' {INTERVAL:.0%} interval {interval[0]:.3f}-{interval[1]:.3f} contains "
                f"{limit:.2f}; more --rounds or a quieter machine narrow it)")
    return verdict


def pooled_median(results: list[BlockResult], rounds: list[int], field: str) -> float:
    return statistics.median(itertools.chain(*(getattr(results[index], field) for index in rounds)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    model_arguments(parser, arch="yolov7-tiny", img_size=640, rounds=10)
    parser.add_argument("--runtime", choices=("torch", "onnxruntime", "openvino"), default="torch",
                        help="the runtime of the forward (fp32; ONNX Runtime and OpenVINO run the cached ONNX export)")
    # The memory sampler reads the tree's PSS every few seconds (every 3 s for yolov7-tiny here): a block must
    # outlast that spacing for the reads to land among the timed forwards, as they do in a run.
    parser.add_argument("--block-s", type=float, default=4.0, help="seconds of forwards per configuration per round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    parser.add_argument("--images", default=str(PROJECT_ROOT / "datasets" / "samples"))
    # Neighbours at the run verdict's 10% still move a forward by several percent, more than the taxes measured.
    parser.add_argument("--quiet-share", type=float, default=0.03,
                        help="count a round only when other processes took at most this share of our cores")
    # The goal is judged on two rows; the single recorders explain it. Leaving them out buys rounds, and it is
    # rounds that narrow the interval the goal is judged by.
    parser.add_argument("--goal-only", action="store_true",
                        help="run only the rows the goal is judged on: bare, the noise control and the whole harness")
    parser.add_argument("--with-stages", action="store_true",
                        help="every block, bare included, runs the pipeline's letterbox and NMS around each forward, "
                             "as a run does; without it the forwards run back to back on one preprocessed batch")
    args = parser.parse_args()

    family = family_for(args.arch)
    config = config_for(args.arch, preprocess={"img_size": args.img_size})
    preprocess, postprocess = config.preprocess, config.postprocess
    network = family.load_network(args.arch, None, 0)
    runtime = build_runtime(args.runtime, threads=args.threads)
    pipeline = family.build_pipeline(network, runtime.prepare(network, family.example_input(preprocess)),
                                     preprocess, postprocess)
    threads = runtime.settings().get("threads") or torch.get_num_threads()
    whole_harness = f"all, workers={loader_workers(None, threads, usable_cpus()[0])[0]}"
    paths = find_images(args.images)
    images = [decode_image(path).image for path in itertools.islice(itertools.cycle(paths), args.batch)]
    batch = pipeline.preprocess(images)

    def forward() -> object:
        return pipeline.forward(batch)

    with tempfile.TemporaryDirectory() as folder:
        rapl = probe_rapl()
        if rapl.available:
            energy, energy_note = EnergyRecorder(), "energy: the machine's RAPL counters"
        else:
            energy = EnergyRecorder(root=fake_powercap(Path(folder)))
            energy_note = (f"energy: RAPL absent ({rapl.reason}); reading a fake powercap tree in a temporary "
                           f"folder instead, which costs less than reading real RAPL counters")
        with loaders(paths, args.batch) as batches:
            bench = Bench(forward, pipeline.stages(), energy, batches, images if args.with_stages else None)
            configurations = bench.configurations()
            if args.goal_only:
                configurations = {name: configurations[name] for name in ("bare", NOISE_CONTROL, whole_harness)}
            for _ in range(args.warmup):
                forward()
            # The fastest of a few: a neighbour busy at the start must not shrink every block.
            estimate_s = min(bench.run_block(configurations["bare"], 3).forward_ms) / 1e3
            forwards = max(3, round(args.block_s / estimate_s))
            # Per configuration, its blocks and the bare block beside each; the bare row pairs every bare block
            # with itself.
            results: dict[str, list[BlockResult]] = {name: [] for name in configurations}
            beside: dict[str, list[BlockResult]] = {name: [] for name in configurations}
            names = list(configurations)
            others = [name for name in names if name != "bare"]
            with ContentionRecorder() as machine:
                for round_index in range(args.rounds):
                    for name in rotated(others, round_index):
                        order = alternated(("bare", name), round_index)
                        blocks = {part: bench.run_block(configurations[part], forwards) for part in order}
                        for part in ("bare", name):
                            results[part].append(blocks[part])
                            beside[part].append(blocks["bare"])

    print(f"{args.arch} at {args.img_size} on {args.runtime}, batch {args.batch}, "
          f"{runtime.settings().get('threads')} threads, {args.rounds} "
          f"rounds x {forwards} forwards per configuration (each beside a bare block of its own, order rotated every "
          f"round)")
    print(f"a round counts for a configuration when other processes took at most {args.quiet_share:.0%} of our cores "
          f"during its block and its bare block; '*': no such round, all rounds used")
    # Periodic costs (a PSS read every few seconds) hit few forwards: the median hides them, the mean does not.
    print(f"{'configuration':<32} {'forward p50 ms':>14} {'x bare':>7} {f'{INTERVAL:.0%} interval':>13} "
          f"{'mean x bare':>11} {'per batch p50 ms':>17} {'x bare':>7} {'quiet rounds':>13}")
    for name in names:
        mine, bare = results[name], beside[name]
        rounds, quiet = kept_rounds(mine, bare, args.quiet_share)
        forward_ratios = round_ratios(mine, bare, rounds, "forward_ms")
        forward_ratio = statistics.median(forward_ratios)
        interval = median_confidence_interval(forward_ratios, INTERVAL)
        if name == whole_harness:
            whole, whole_interval, whole_rounds = forward_ratio, interval, len(rounds) if quiet else 0
        elif name == NOISE_CONTROL:
            noise = forward_ratio
        spread = f"{interval[0]:.3f}-{interval[1]:.3f}" if interval else "-"
        print(f"{name:<32} {pooled_median(mine, rounds, 'forward_ms'):>14.2f} {forward_ratio:>7.3f} {spread:>13} "
              f"{ratio(mine, bare, rounds, 'forward_ms', statistics.fmean):>11.3f} "
              f"{pooled_median(mine, rounds, 'batch_ms'):>17.2f} {ratio(mine, bare, rounds, 'batch_ms'):>7.3f} "
              f"{f'{len(rounds) if quiet else 0}/{len(mine)}' + ('' if quiet else '*'):>13}")
    goal = GOALS.get((args.arch, args.img_size))
    if goal is None:
        print(f"goal: none set for {args.arch} at {args.img_size} (whole harness forward x bare {whole:.3f})")
    else:
        judged = f"goal: whole harness ({whole_harness}, as a run here decodes) forward within {goal:.0%} of bare"
        if whole_rounds < MIN_QUIET_ROUNDS:
            print(f"{judged}: {whole:.3f} -> not judged ({whole_rounds} quiet rounds; at least {MIN_QUIET_ROUNDS} "
                  f"are needed)")
        elif abs(noise - 1) > goal / 2:
            print(f"{judged}: {whole:.3f} -> not judged (bare against itself is off by {abs(noise - 1):.1%}: too "
                  f"noisy to resolve {goal:.0%})")
        else:
            print(f"{judged}: {whole:.3f} -> {judge_goal(whole, whole_interval, goal)}")
    memory = [sampler.summary() for sampler in bench.samplers]
    if memory and all(summary["pss_status"] == "measured" for summary in memory):
        # Every block reads the tree's PSS once entering and once leaving, outside its timing.
        print(f"memory sampler (new): {sum(m['samples'] for m in memory)} RSS samples; "
              f"{sum(m['pss_samples'] - 2 for m in memory)} tree PSS reads while forwards were timed "
              f"({len(memory)} blocks), one read {statistics.median(m['pss_read_ms'] for m in memory):.1f} ms (median)")
    elif memory:
        print(f"memory sampler (new): PSS unavailable ({memory[0]['pss_reason']})")
    print("stages: every forward between the pipeline's own (letterbox before, NMS after), bare blocks included"
          if args.with_stages else "stages: forwards back to back on one preprocessed batch, the other stages doing "
          "no work (--with-stages runs them)")
    print(energy_note)
    summary = machine.summary()
    if summary["status"] == "measured":
        steal = f"{summary['steal_share']:.1%}" if summary["steal_share"] is not None else "not reported"
        print(f"machine during the rounds: other processes {summary['other_processes_cpu_share']:.1%} of the cores, "
              f"steal {steal}, load average {summary['load_average_start'][0]:.2f} -> "
              f"{summary['load_average_end'][0]:.2f}")
        print(contention_verdict(summary) or "machine quiet: other processes used under 10% of the cores")
    else:
        print(f"machine during the rounds: contention unavailable ({summary['reason']})")


if __name__ == "__main__":
    sys.exit(command_status(main))
