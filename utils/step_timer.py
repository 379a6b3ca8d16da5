"""StepTimer: hand timing of pipeline steps into plain records, with listeners for other recorders."""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterator, Optional, Protocol


class StepListener(Protocol):
    def step_started(self, name: str) -> None: ...

    def step_ended(self, name: str) -> None: ...


@dataclass(frozen=True)
class StepRecord:
    step: str
    parent: Optional[str]
    pass_: str
    batch: int
    images: int
    warmup: bool
    start_ns: int
    end_ns: int

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


@dataclass
class _BatchContext:
    pass_: str = ""
    batch: int = -1
    images: int = 0
    warmup: bool = False


class StepTimer:
    """Times named steps with time.perf_counter_ns; steps may nest (postprocess -> nms)."""

    def __init__(self, listeners: list[StepListener] | None = None):
        self.records: list[StepRecord] = []
        self.listeners: list[StepListener] = list(listeners or [])
        self.origin_ns = time.perf_counter_ns()
        self._context = _BatchContext()
        self._stack: list[str] = []

    def set_batch(self, pass_: str, batch: int, images: int, warmup: bool) -> None:
        self._context = _BatchContext(pass_, batch, images, warmup)

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
        start = time.perf_counter_ns()
        try:
            yield
            completed = True
        finally:
            end = time.perf_counter_ns()
            for listener in reversed(self.listeners):
                listener.step_ended(name)
            self._stack.pop()
            # An interrupted or failed step is not a measurement: listeners close it, no record is kept.
            if completed:
                ctx = self._context
                self.records.append(StepRecord(name, parent, ctx.pass_, ctx.batch, ctx.images, ctx.warmup, start, end))

    def rows(self) -> list[dict]:
        """Long-form rows for steps_timer.csv; times relative to the timer's creation."""
        rows = []
        for record in self.records:
            row = asdict(record)
            row["pass"] = row.pop("pass_")
            start_ns, end_ns = row.pop("start_ns"), row.pop("end_ns")
            row["ms"] = (end_ns - start_ns) / 1e6
            row["start_s"] = (start_ns - self.origin_ns) / 1e9
            row["end_s"] = (end_ns - self.origin_ns) / 1e9
            rows.append(row)
        return rows
