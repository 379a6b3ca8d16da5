"""The recorders of one run, and the context that attaches those a pass's kind listens to.

Each measurement of utils/measure/registry.py says which pass kinds it listens in: energy, memory and CPU
contention describe the timed passes only, since warm-up, hooked, profiled and accuracy passes run work that was
never timed, so their joules, megabytes and stolen ticks would be charged to the timed images. A pass with a
listener runs inside a `run` bracket (RUN_STEP), the window the listeners total; outside their passes the
recorders are detached (and the memory sampler paused). Below the layer (utils/measure/below_layer/control.py)
listens too, outside every measurement's window: it is no registry measurement (its kernels join the layer
tables and its stacks the profiler's trace).
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence

from utils.measure.contract import GrowingTable, Measurement, Recording
from utils.measure.registry import measurements
from utils.measure.steps.step_timer import StepTimer
from utils.record.run_record import RunRecord
from utils.record.steps import RUN_STEP, PassKind

if TYPE_CHECKING:
    from utils.measure.below_layer.control import BelowTheLayer


@dataclass
class PassRecorders:
    timer: StepTimer
    recordings: Sequence[tuple[Measurement, Recording]]  # in registry order
    below: Optional["BelowTheLayer"] = None

    @classmethod
    def built(cls, settings: Mapping[str, Any], below: Optional["BelowTheLayer"] = None) -> "PassRecorders":
        """Every registered measurement's recording, each from its config section (`settings`, by measurement
        key; absent for one without a section)."""
        return cls(StepTimer(), [(measurement, measurement.build(settings.get(measurement.key)))
                                 for measurement in measurements()], below)

    @contextmanager
    def running(self) -> Iterator[None]:
        """Around all the passes: every recording running, then each told the passes are about to start."""
        with ExitStack() as stack:
            for _, recording in self.recordings:
                stack.enter_context(recording.running())
            for _, recording in self.recordings:
                recording.before_passes()
            yield

    @contextmanager
    def listening(self, kind: PassKind) -> Iterator[None]:
        """The recordings that listen in this pass kind, attached for the pass and detached after it."""
        active = [recording for measurement, recording in self.recordings if kind in measurement.listens_in]
        below = self.below if self.below is not None and kind in self.below.LISTENS_IN else None
        if not active and below is None:
            yield
            return
        listeners = [listener for recording in active for listener in recording.listeners]
        with ExitStack() as stack:
            if below is not None:
                # Outside the run bracket: starting the sampler is not the timed passes' energy or memory.
                stack.enter_context(below.timed_pass(self.timer))
            for recording in active:
                stack.enter_context(recording.around_pass())
            self.timer.listeners.extend(listeners)
            stack.callback(self._detach, listeners)
            stack.enter_context(self.timer.step(RUN_STEP))
            for recording in active:
                stack.enter_context(recording.inside_pass())
            yield

    def growing_tables(self) -> list[GrowingTable]:
        return [table for _, recording in self.recordings for table in recording.growing_tables()]

    def collect(self, record: RunRecord) -> None:
        """Each measurement's result into the run record, under its key."""
        for measurement, recording in self.recordings:
            record.measured[measurement.key] = recording.collect(record)

    def _detach(self, listeners: list) -> None:
        for listener in listeners:
            self.timer.listeners.remove(listener)
