"""Energy as a measurement (utils/measure/energy/measurement.py): switched off by its config with the reason, the
idle reading before the passes only when asked, and energy per image over the timed passes' images alone. The RAPL
recorder itself: test_recorder.py."""
from utils.config.schema import EnergySection as EnergySettings
from utils.measure.contract import Disabled
from utils.measure.energy.measurement import MEASUREMENT, EnergyRecording, build
from utils.record.run_record import RunRecord
from utils.record.steps import PassKind, StepRecord
from tests.support.run_identity import identity


class StandIn:
    """The recorder's face, counting what the measurement asks of it."""

    available, columns = False, staticmethod(lambda: ())

    def __init__(self):
        self.idle, self.images = [], []

    def measure_idle(self, seconds):
        self.idle.append(seconds)

    def summary(self, images):
        self.images.append(images)
        return {"status": "unavailable", "reason": "no RAPL here"}


def test_switched_off_by_its_config_it_says_so():
    off = build(EnergySettings(enabled=False))
    assert isinstance(off, Disabled) and off.collect(RunRecord(identity())).section == {
        "status": "unavailable", "reason": "disabled by the config (benchmark.energy.enabled: false)"}
    assert MEASUREMENT.key == "energy" and MEASUREMENT.listens_in == {PassKind.TIMED}


def test_idle_is_read_only_when_asked_and_images_are_the_timed_passes():
    for idle_s, expected in ((0.0, []), (2.5, [2.5])):
        recording = EnergyRecording(EnergySettings(idle_s=idle_s))
        recording.recorder = StandIn()
        recording.before_passes()
        assert recording.recorder.idle == expected
    record = RunRecord(identity())
    record.steps = [StepRecord("pipeline", None, kind, 0, batch, 2, 0, 1) for kind in (PassKind.WARMUP, PassKind.TIMED)
                    for batch in range(3)] + [StepRecord("forward", "pipeline", PassKind.TIMED, 0, 0, 2, 0, 1)]
    result = recording.collect(record)
    assert recording.recorder.images == [6] and result.tables == {} and result.section["status"] == "unavailable"
