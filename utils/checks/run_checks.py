"""The checks that follow the measured passes, outside every timed one: the accuracy pass, and for a runtime
other than the reference the agreement check against the torch fp32 reference."""
from __future__ import annotations

from typing import Callable

from utils.checks.accuracy.accuracy_pass import run_accuracy_pass
from utils.checks.agreement.agreement_check import run_agreement_check
from utils.core.interruption import RunStops
from utils.measure.listening import PassRecorders
from utils.checks.reference import Reference
from utils.record.built_run import BuiltRun
from utils.record.run_record import RunRecord


def run_checks(run: BuiltRun, with_reference: bool, recorders: PassRecorders, record: RunRecord, stops: RunStops,
               console: Callable[[str], None]) -> None:
    reference = Reference(run.family, run.sections) if with_reference else None
    with stops.ending_passes():
        accuracy = run_accuracy_pass(run, reference, recorders, console)
        if accuracy is not None:
            record.accuracy, record.accuracy_classes = accuracy.summary, accuracy.classes
    if reference is not None:
        with stops.ending_passes():
            record.agreement, verdict_warnings = run_agreement_check(run, reference, record.accuracy, console)
            record.warn(*verdict_warnings)
