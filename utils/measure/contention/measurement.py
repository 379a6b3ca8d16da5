"""Contention as a measurement (utils/measure/contract.py): other processes' share of the run's cores over each
timed pass, and a warning with the thread count the free cores support when they took much of them."""
from __future__ import annotations

from typing import Any, ContextManager

from utils.measure.contention import report
from utils.measure.contention.recorder import ContentionRecorder, contention_verdict, with_thread_advice
from utils.measure.contract import Measurement, Recording
from utils.record.run_record import MeasurementResult, RunRecord
from utils.record.steps import PassKind


class ContentionRecording(Recording):
    def __init__(self):
        self.recorder = ContentionRecorder()

    def around_pass(self) -> ContextManager[Any]:
        return self.recorder

    def collect(self, record: RunRecord) -> MeasurementResult:
        section = with_thread_advice(self.recorder.summary())
        verdict = contention_verdict(section, threads=record.identity.runtime.get("threads"))
        if verdict is not None:
            record.warn(verdict)
        return MeasurementResult(section)


def build(settings: None) -> Recording:
    return ContentionRecording()


MEASUREMENT = Measurement(
    key="contention",
    listens_in=frozenset({PassKind.TIMED}),
    build=build,
    console=report.console_lines,
    environment=report.environment_rows,
    figures=report.figures,
)
