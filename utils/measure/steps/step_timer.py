"""StepTimer: hand timing of pipeline steps into plain StepRecords, telling listeners as steps start and end."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

from utils.record.steps import PIPELINE_STEP, PassKind, StepRecord, step_rows
from utils.measure.listener import StepListener


@dataclass
class _BatchContext:
    pass_kind: PassKind = PassKind.TIMED
    pass_index: int = 0
    batch: int = -1
    images: int = 0
    cold_shape: bool = False


class StepTimer:
    """Times named steps with a nanosecond clock (time.perf_counter_ns unless one is given, e.g. a test's own);
    steps may nest (postprocess -> nms)."""

    def __init__(self, listeners: list[StepListener] | None = None,
                 clock: Callable[[], int] = time.perf_counter_ns):
        self.records: list[StepRecord] = []
        self.listeners: list[StepListener] = list(listeners or [])
        self._clock = clock
        self.origin_ns = clock()
        self._context = _BatchContext()
        self._stack: list[str] = []
        # Called once a batch's steps are all closed (its pipeline step recorded): the run's journal writes them.
        self.after_batch: Optional[Callable[[], None]] = None

    def sibling(self) -> "StepTimer":
        """A timer for another thread that times into the same records on the same clock and ends its batches the
        same way (the journal), with its own stack of open steps and no listeners: a listener follows one stack."""
        other = StepTimer(clock=self._clock)
        other.records, other.origin_ns, other.after_batch = self.records, self.origin_ns, self.after_batch
        return other

    def set_batch(self, pass_kind: PassKind, pass_index: int, batch: int, cold_shape: bool = False) -> None:
        self._context = _BatchContext(pass_kind, pass_index, batch, 0, cold_shape)

    def set_images(self, images: int) -> None:
        """The image count is only known once the loader has delivered the batch."""
        self._context.images = images

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        parent = self._stack[-1] if self._stack else None
        self._stack.append(name)
        for listener in self.listeners:
            listener.step_started(name)
        completed = False
        start = self._clock()
        try:
            yield
            completed = True
        finally:
            end = self._clock()
            for listener in reversed(self.listeners):
                listener.step_ended(name)
            self._stack.pop()
            # An interrupted or failed step is not a measurement: listeners close it, no record is kept.
            if completed:
                ctx = self._context
                self.records.append(StepRecord(name, parent, ctx.pass_kind, ctx.pass_index, ctx.batch, ctx.images,
                                               start, end, ctx.cold_shape))
                if name == PIPELINE_STEP and self.after_batch is not None:
                    self.after_batch()

    def rows(self) -> list[dict]:
        """Long-form rows for steps_timer.csv; times relative to the timer's creation."""
        return step_rows(self.records, self.origin_ns)
