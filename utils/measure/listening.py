"""Which recorders listen during which pass: the one table, and the context that applies it.

Energy, memory and CPU contention describe the timed passes only: warm-up, hooked, profiled and accuracy
passes run work that was never timed, so their joules, megabytes and stolen ticks would be charged to the
timed images. A pass whose recorders listen runs inside a `run` bracket (RUN_STEP), the window that the
energy and memory recorders total; outside their passes the recorders are detached and the memory sampler
is paused.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterator, Optional

from utils.record.run_record import RunRecord, Table
from utils.record.sections import DISABLED
from utils.record.steps import PIPELINE_STEP, RUN_STEP, PassKind
from utils.measure.contention.recorder import ContentionRecorder
from utils.measure.energy.recorder import EnergyRecorder, RaplStatus
from utils.measure.memory.recorder import MEMORY_COLUMNS, MEMORY_STEP_COLUMNS, MemorySampler
from utils.measure.steps.step_timer import StepTimer


class Recorder(str, Enum):
    ENERGY = "energy"
    MEMORY = "memory"
    CONTENTION = "contention"
    BELOW = "below the layer"  # py-spy, the CPU counters, ITT tasks (utils/measure/below_layer/control.py)


LISTENING: dict[PassKind, frozenset[Recorder]] = {
    PassKind.TIMED: frozenset(Recorder),
    PassKind.WARMUP: frozenset(),
    PassKind.LAYERS: frozenset(),
    PassKind.PROFILER: frozenset(),
    PassKind.ACCURACY: frozenset(),
}


@dataclass
class PassRecorders:
    timer: StepTimer
    energy: EnergyRecorder
    memory: Optional[MemorySampler]
    contention: ContentionRecorder
    below: Optional[Any] = None  # utils.measure.below_layer.control.BelowTheLayer

    @classmethod
    def for_benchmark(cls, bench: Any, below: Optional[Any] = None) -> "PassRecorders":
        """The recorders the config's benchmark section asks for; energy disabled still says why."""
        energy = EnergyRecorder() if bench.energy.enabled else EnergyRecorder(
            status=RaplStatus(available=False, reason="disabled by the config (benchmark.energy.enabled: false)"))
        memory = MemorySampler(interval_s=bench.memory.interval_s) if bench.memory.enabled else None
        return cls(StepTimer(), energy, memory, ContentionRecorder(), below)

    @contextmanager
    def listening(self, kind: PassKind) -> Iterator[None]:
        """The recorders LISTENING names for this pass kind, attached for the pass and detached after it."""
        listen = LISTENING[kind]
        if not listen:
            yield
            return
        listeners = [recorder for role, recorder in ((Recorder.ENERGY, self.energy), (Recorder.MEMORY, self.memory))
                     if role in listen and recorder is not None]
        with ExitStack() as stack:
            if self.below is not None and Recorder.BELOW in listen:
                # Outside the run bracket: starting the sampler is not the timed passes' energy or memory.
                stack.enter_context(self.below.timed_pass(self.timer))
            if Recorder.CONTENTION in listen:
                stack.enter_context(self.contention)
            self.timer.listeners.extend(listeners)
            stack.callback(self._detach, listeners)
            stack.enter_context(self.timer.step(RUN_STEP))
            if self.memory is not None and Recorder.MEMORY in listen:
                # Inside the bracket: every sample falls within a window the memory steps show.
                self.memory.resume()
                stack.callback(self.memory.pause)
            yield

    def collect(self, record: RunRecord) -> None:
        """Energy and memory into the run record. Energy per image is per image of the timed passes, the
        only ones it listened to."""
        energy, memory = self.energy, self.memory
        images = sum(r.images for r in record.steps if r.step == PIPELINE_STEP and r.pass_kind is PassKind.TIMED)
        record.energy = energy.summary(images=images)
        if energy.available:
            record.energy_table = Table(energy.rows(), tuple(energy.columns()))
        if memory is not None:
            record.memory = memory.summary()
            record.memory_samples = Table(memory.rows(), MEMORY_COLUMNS)
            record.memory_steps = Table(memory.step_rows(), MEMORY_STEP_COLUMNS)
        else:
            record.memory = {"status": DISABLED}

    def _detach(self, listeners: list) -> None:
        for listener in listeners:
            self.timer.listeners.remove(listener)
