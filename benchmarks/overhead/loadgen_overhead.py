"""LoadGen's overhead per query: detbench's system under test driven by MLPerf LoadGen against a bare loop.

    .venv/bin/python benchmarks/overhead/loadgen_overhead.py [--rounds 5] [--queries 400] [--work-us 0 --work-us 2000]

Both sides run the same stage, a busy wait of --work-us microseconds standing in for the pipeline, through
detbench's own code: the bare loop calls it one image after another with the step timer around it (as a timed
pass does); the LoadGen side is a SingleStream test whose queries go through detbench's SUT (utils.scenarios.
loadgen.test: LoadGen's issue callback, the queue, the worker thread, the step timer, QuerySamplesComplete).
SingleStream issues a query only when the previous one is complete, so the median gap between two issues is
the time one query costs; the overhead is that minus the bare loop's median per image. Rounds interleave the
two sides, and the figure is the median over rounds. Prints its figures; never a test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from datasets.image_folder import LoadedImage  # noqa: E402
from pipelines.contract import Detections, Stage  # noqa: E402
from utils.core.errors import command_status  # noqa: E402
from utils.measure.steps.timed_batch import run_stages  # noqa: E402
from utils.scenarios.loadgen.test import AnswerSinks, _Answers, import_loadgen  # noqa: E402
from utils.record.steps import PassKind, PIPELINE_STEP  # noqa: E402
from utils.measure.steps.step_timer import StepTimer  # noqa: E402

NO_DETECTIONS = Detections(torch.zeros(0, 4), torch.zeros(0), torch.zeros(0, dtype=torch.long))


class SpinPipeline:
    """What the SUT's worker calls: stages(), here one stage that waits --work-us. `native`: the wait runs
    in a torch op that releases the GIL (as a forward does); else a Python busy wait that holds it."""

    def __init__(self, work_us: float, native: bool):
        self.work_ns = int(work_us * 1000)
        self.native = native

    def forward(self, images: list) -> list[Detections]:
        if self.native:
            if self.work_ns:
                time.sleep(self.work_ns / 1e9)  # releases the GIL, as torch's kernels do
        else:
            end = time.perf_counter_ns() + self.work_ns
            while time.perf_counter_ns() < end:
                pass
        return [NO_DETECTIONS] * len(images)

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("forward", self.forward),)


def bare_loop(pipeline: SpinPipeline, image: np.ndarray, queries: int) -> float:
    """Median ns per image of the stage run one image after another, timed as a timed pass times it."""
    timer, stages, times = StepTimer(), pipeline.stages(), []
    for index in range(queries):
        start = time.perf_counter_ns()
        timer.set_batch(PassKind.TIMED, 0, index)
        with timer.step(PIPELINE_STEP):
            run_stages(stages, timer, [image])
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times)


def under_loadgen(lg, pipeline: SpinPipeline, image: np.ndarray, queries: int, log_dir: Path) -> float:
    """Median ns between two SingleStream issues through detbench's SUT."""
    answers = _Answers(lg, pipeline, AnswerSinks(StepTimer()), {i: LoadedImage(f"{i}", image) for i in range(8)}, 1,
                       lambda images: None, set())
    issued: list[int] = []

    def issue(samples):
        issued.append(time.perf_counter_ns())
        answers.issue(samples)

    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.SingleStream
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_query_count = settings.max_query_count = queries
    settings.min_duration_ms = 0
    settings.single_stream_expected_latency_ns = max(pipeline.work_ns, 1000)
    log = lg.LogSettings()
    log.log_output.outdir = str(log_dir)
    log.log_output.copy_summary_to_stdout = False
    log.enable_trace = False
    worker = threading.Thread(target=answers.run, daemon=True)
    worker.start()
    sut = lg.ConstructSUT(issue, answers.flush)
    qsl = lg.ConstructQSL(8, 8, lambda indices: None, lambda indices: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, settings, log)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
        answers.waiting.put(None)
        worker.join()
    return statistics.median(np.diff(issued))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--work-us", type=float, action="append", default=None,
                        help="the stage's wait in microseconds, run as a sleep (GIL released) and as a busy "
                             "wait (GIL held); repeatable; default 0 and 2000")
    args = parser.parse_args()
    lg = import_loadgen()
    image = np.zeros((64, 64, 3), np.uint8)
    print(f"loadgen_overhead: {args.rounds} interleaved rounds of {args.queries} queries (SingleStream, 1 image "
          "per query) against a bare loop of as many images; medians in microseconds")
    with tempfile.TemporaryDirectory(prefix="detbench-loadgen-") as logs:
        cases = [(work_us, native) for work_us in args.work_us or [0.0, 2000.0] for native in (True, False)]
        for work_us, native in cases:
            pipeline = SpinPipeline(work_us, native)
            bare_ns, loadgen_ns = [], []
            for index in range(args.rounds):
                bare_ns.append(bare_loop(pipeline, image, args.queries))
                loadgen_ns.append(under_loadgen(lg, pipeline, image, args.queries, Path(logs)))
            bare, driven = statistics.median(bare_ns), statistics.median(loadgen_ns)
            per_round = [(d - b) / 1e3 for b, d in zip(bare_ns, loadgen_ns)]
            kind = "sleep, GIL released" if native else "busy wait, GIL held"
            print(f"  work {work_us:7.0f} us ({kind}): bare loop {bare / 1e3:8.1f} us/query, under LoadGen "
                  f"{driven / 1e3:8.1f} us/query, overhead {statistics.median(per_round):7.1f} us/query "
                  f"(rounds: {', '.join(f'{value:.1f}' for value in per_round)})")


if __name__ == "__main__":
    sys.exit(command_status(main))
