"""The detectors of a camera run: each a thread that takes batches off the board and runs the pipeline's stages
on them, every step timed by a StepTimer as a timed pass does (so steps_timer.csv, the energy and memory
recorders, which listen to the run's first timer, and the journal see them as any other batch).

Between batches a detector passes the gate, where the run's main thread holds it still while it opens and
closes the window: a StepTimer keeps one stack of open steps, and the window's `run` bracket must not land
inside a batch. Before the cameras start, each detector warms up, untimed, every input shape its batches can
take (one camera's first frame, 1 to its largest batch), on its own thread: a runtime's stream is its thread's.
"""
from __future__ import annotations

import itertools
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import numpy as np

from pipelines.contract import FORWARD_STAGE, DetectionPipeline
from utils.core.native_thread import name_this_thread
from utils.measure.steps.step_timer import StepTimer
from utils.measure.steps.timed_batch import BatchPlace, run_stages, timed_batch
from utils.record.steps import PassKind
from utils.scenarios.cameras.board import FrameBoard
from utils.scenarios.cameras.book import BatchRun, FrameBook

THREAD_NAME = "detector-"  # + its index
TAKE_WAIT_S = 0.05  # how long a detector waits on an empty board before it passes the gate again


def stage_groups(pipeline: DetectionPipeline) -> dict[str, str]:
    """Each leaf stage's group for the CPU split: the stages before the forward preprocess, after it postprocess."""
    groups, seen_forward = {}, False
    for stage in pipeline.stages():
        if stage.name == FORWARD_STAGE:
            groups[stage.name], seen_forward = "forward", True
        else:
            groups[stage.name] = "postprocess" if seen_forward else "preprocess"
    return groups


class StageCpu:
    """A step listener: the CPU time (time.thread_time) one thread spends in each stage group of a batch. Steps
    other threads open on the same timer (the window's bracket) are not its thread's, and left out."""

    def __init__(self, groups: dict[str, str]):
        self.groups = groups
        self.thread: Optional[int] = None
        self._started: dict[str, float] = {}
        self.batch: dict[str, float] = {}

    def begin(self) -> None:
        self.thread, self.batch = threading.get_ident(), {}

    def step_started(self, name: str) -> None:
        if name in self.groups and threading.get_ident() == self.thread:
            self._started[name] = time.thread_time()

    def step_ended(self, name: str) -> None:
        if name in self._started and threading.get_ident() == self.thread:
            group = self.groups[name]
            self.batch[group] = self.batch.get(group, 0.0) + time.thread_time() - self._started.pop(name)


class BatchGate:
    """Detectors pass it between batches; `held()` returns once every detector stands at it (or has left), and
    keeps them there until its block ends."""

    def __init__(self, detectors: int):
        self.detectors = detectors
        self._changed = threading.Condition()
        self._held = False
        self._still = 0  # detectors standing at the gate, or gone

    def checkpoint(self) -> None:
        with self._changed:
            if not self._held:
                return
            self._still += 1
            self._changed.notify_all()
            while self._held:
                self._changed.wait()
            self._still -= 1

    def leave(self) -> None:
        """A detector that takes no more batches."""
        with self._changed:
            self._still += 1
            self._changed.notify_all()

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._changed:
            self._held = True
            while self._still < self.detectors:
                self._changed.wait(0.1)  # short waits: a stop signal reaches the main thread between them
        try:
            yield
        finally:
            with self._changed:
                self._held = False
                self._changed.notify_all()


class ShapeBook:
    """The input shapes the detectors have run, shared by them: a timed batch of a shape none ran before is cold
    (reported apart, as warmup.cold_shapes)."""

    def __init__(self) -> None:
        self.warm: set[tuple] = set()
        self.cold: list[dict] = []
        self._lock = threading.Lock()

    def ran(self, shape: tuple, batch: int, timed: bool) -> bool:
        """Whether this batch is the first of its shape inside the window."""
        with self._lock:
            first = shape not in self.warm
            self.warm.add(shape)
            if first and timed:
                self.cold.append({"batch": batch, "shape": list(shape)})
            return first and timed


@dataclass(frozen=True)
class DetectorPlan:
    """What one detector serves: its cameras, its timer (the run's own for the first detector), the largest batch
    it can take, and the frames it warms its input shapes on."""

    index: int
    cameras: tuple[int, ...]
    timer: StepTimer
    largest_batch: int
    warm_frames: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class DetectorShared:
    """What every detector of the run shares: the board, the book, the gate, the shapes run, whether the window
    is open (`timed()`), and the batch numbers."""

    board: FrameBoard
    book: FrameBook
    gate: BatchGate
    shapes: ShapeBook
    timed: Callable[[], bool]
    numbers: Iterator[int]
    numbers_lock: threading.Lock


class Detector:
    def __init__(self, plan: DetectorPlan, pipeline: DetectionPipeline, shared: DetectorShared, batch_size: int):
        self.plan, self.pipeline, self.shared, self.batch_size = plan, pipeline, shared, batch_size
        self.stages = pipeline.stages()
        self.cpu = StageCpu(stage_groups(pipeline))
        plan.timer.listeners.append(self.cpu)
        self.ready = threading.Event()  # its shapes warm (or it failed)
        self.released = threading.Event()
        self.failure: Optional[BaseException] = None
        self.warmed: Optional[dict] = None

    def run(self) -> None:
        name_this_thread(f"{THREAD_NAME}{self.plan.index}")
        try:
            self._warm_shapes()
            self.ready.set()
            self._serve()
        except BaseException as error:  # kept for the run's main thread
            self.failure = error
        finally:
            self.ready.set()
            self.shared.gate.leave()
            self.released.wait()
            self.plan.timer.listeners.remove(self.cpu)

    def _warm_shapes(self) -> None:
        started = time.perf_counter()
        batches = 0
        for image in self.plan.warm_frames:
            for size in range(1, self.plan.largest_batch + 1):
                shape = tuple(self.pipeline.input_shape([image.shape[:2]] * size))
                if shape in self.shared.shapes.warm:
                    continue
                run_stages(self.stages, StepTimer(), [image] * size)
                self.shared.shapes.ran(shape, -1, False)
                batches += 1
        self.warmed = {"detector": self.plan.index, "thread_id": threading.get_native_id(), "batches": batches,
                       "ms": (time.perf_counter() - started) * 1e3}

    def _serve(self) -> None:
        shared = self.shared
        while True:
            shared.gate.checkpoint()
            taken = shared.board.take(self.plan.cameras, self.batch_size, TAKE_WAIT_S)
            if taken is None:
                return
            if taken:
                self._detect([frame for _, frame in taken])

    def _detect(self, frames: list) -> None:
        shared, timer = self.shared, self.plan.timer
        with shared.numbers_lock:
            index = next(shared.numbers)
        timed = shared.timed()
        images = [frame.item.image for frame in frames]
        cold = shared.shapes.ran(tuple(self.pipeline.input_shape([image.shape[:2] for image in images])), index,
                                 timed)
        self.cpu.begin()
        started = time.monotonic()
        result = timed_batch(lambda: [frame.item for frame in frames],
                             lambda batch: run_stages(self.stages, timer, batch), timer,
                             BatchPlace(PassKind.TIMED if timed else PassKind.WARMUP, 0, index, cold))
        ended = time.monotonic()
        shared.book.detected(frames, result.output, BatchRun(index, started, ended, timed, dict(self.cpu.batch)))


def batch_numbers() -> tuple[Iterator[int], threading.Lock]:
    return itertools.count(), threading.Lock()
