"""Energy as a measurement (utils/measure/contract.py): the RAPL recorder at every step boundary of the timed
passes, with an optional idle reading before them (benchmark.energy)."""
from __future__ import annotations

from utils.config.schema import EnergySection as EnergySettings
from utils.measure.contract import Disabled, Measurement, PageSection, Plot, Recording
from utils.measure.energy import report
from utils.measure.energy.files import ENERGY, ENERGY_PLOT
from utils.measure.energy.recorder import EnergyRecorder
from utils.record.run_record import MeasurementResult, RunRecord, Table
from utils.record.sections import UNAVAILABLE
from utils.record.steps import PIPELINE_STEP, PassKind


class EnergyRecording(Recording):
    def __init__(self, settings: EnergySettings):
        self.recorder = EnergyRecorder()
        self.idle_s = settings.idle_s
        self.listeners = (self.recorder,)

    def before_passes(self) -> None:
        if self.idle_s > 0:
            self.recorder.measure_idle(self.idle_s)

    def collect(self, record: RunRecord) -> MeasurementResult:
        """Energy per image is per image of the timed passes, the only ones it listened to."""
        recorder = self.recorder
        images = sum(r.images for r in record.steps if r.step == PIPELINE_STEP and r.pass_kind is PassKind.TIMED)
        tables = {ENERGY: Table(recorder.rows(), tuple(recorder.columns()))} if recorder.available else {}
        return MeasurementResult(recorder.summary(images=images), tables)


def build(settings: EnergySettings) -> Recording:
    if not settings.enabled:
        return Disabled({"status": UNAVAILABLE, "reason": "disabled by the config (benchmark.energy.enabled: false)"})
    return EnergyRecording(settings)


MEASUREMENT = Measurement(
    key="energy",
    listens_in=frozenset({PassKind.TIMED}),
    config_key="benchmark.energy",
    build=build,
    files=(ENERGY,),
    console=report.console_lines,
    page=PageSection("energy", "Energy", after="memory", render=report.render, headline=report.energy_headline),
    plots=(Plot(ENERGY_PLOT, reads=(ENERGY,), draw="utils.measure.energy.plots:draw"),),
    scalars=report.scalars,
    figures=report.figures,
)
