"""Memory as a measurement (utils/measure/contract.py): the sampler runs from before the first pass to after the
last, takes its baseline once the model is loaded, and samples inside the timed passes only (benchmark.memory)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from utils.config.schema import MemorySection as MemorySettings
from utils.measure.contract import Disabled, GrowingTable, Measurement, PageSection, Plot, Recording
from utils.measure.memory import report
from utils.measure.memory.files import MEMORY, MEMORY_PLOT, MEMORY_STEPS
from utils.measure.memory.recorder import MEMORY_COLUMNS, MEMORY_STEP_COLUMNS, MemorySampler
from utils.record.run_record import MeasurementResult, RunRecord, Table
from utils.record.sections import DISABLED
from utils.record.steps import PassKind


class MemoryRecording(Recording):
    def __init__(self, settings: MemorySettings):
        self.sampler = MemorySampler(interval_s=settings.interval_s)
        self.listeners = (self.sampler,)

    @contextmanager
    def running(self) -> Iterator[None]:
        with self.sampler:
            self.sampler.mark_baseline()
            self.sampler.pause()  # sampled inside the passes it listens in only
            yield

    @contextmanager
    def inside_pass(self) -> Iterator[None]:
        # Inside the run bracket: every sample falls within a window the memory steps show.
        self.sampler.resume()
        try:
            yield
        finally:
            self.sampler.pause()

    def growing_tables(self) -> Sequence[GrowingTable]:
        return (GrowingTable(MEMORY, MEMORY_COLUMNS, self.sampler.rows),
                GrowingTable(MEMORY_STEPS, MEMORY_STEP_COLUMNS, self.sampler.step_rows))

    def collect(self, record: RunRecord) -> MeasurementResult:
        sampler = self.sampler
        return MeasurementResult(sampler.summary(), {MEMORY: Table(sampler.rows(), MEMORY_COLUMNS),
                                                     MEMORY_STEPS: Table(sampler.step_rows(), MEMORY_STEP_COLUMNS)})


def build(settings: MemorySettings) -> Recording:
    return MemoryRecording(settings) if settings.enabled else Disabled({"status": DISABLED})


MEASUREMENT = Measurement(
    key="memory",
    listens_in=frozenset({PassKind.TIMED}),
    config_key="benchmark.memory",
    build=build,
    files=(MEMORY, MEMORY_STEPS),
    console=report.console_lines,
    page=PageSection("memory", "Memory", after="layers", render=report.render, headline=report.peak_pss_headline),
    plots=(Plot(MEMORY_PLOT, reads=(MEMORY, MEMORY_STEPS), draw="utils.measure.memory.plots:draw"),),
    scalars=report.scalars,
    figures=report.figures,
)
