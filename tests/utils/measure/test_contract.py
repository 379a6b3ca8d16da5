"""The one contract of a measurement (utils/measure/contract.py): a recording does nothing in a hook it does not fill,
a measurement switched off says why in its own section, and a summary from before a measurement reported says it was
not measured yet. A measurement through every output: test_registry.py."""
from utils.measure.contract import Disabled, Measurement, Recording, section_in
from utils.record.run_record import MeasurementResult, RunRecord
from utils.record.sections import NOT_MEASURED_YET
from utils.record.steps import PassKind
from tests.support.run_identity import identity


class Counting(Recording):
    def collect(self, record):
        return MeasurementResult({"status": "measured", "images": 1})


def test_a_recording_does_nothing_in_the_hooks_it_leaves_out():
    recording = Counting()
    with recording.running() as running, recording.around_pass() as around, recording.inside_pass() as inside:
        assert running is around is inside is None
    recording.before_passes()
    assert recording.listeners == () and recording.growing_tables() == ()


def test_a_switched_off_measurement_keeps_its_reason_and_each_result_is_its_own():
    off = Disabled({"status": "disabled", "reason": "benchmark.x.enabled: false"})
    first = off.collect(RunRecord(identity()))
    first.section["status"] = "changed"
    assert off.collect(RunRecord(identity())).section == {"status": "disabled", "reason": "benchmark.x.enabled: false"}


def test_a_summary_without_the_measurements_section_says_not_measured_yet():
    plain = Measurement(key="plain", listens_in=frozenset({PassKind.TIMED}), build=lambda settings: Counting())
    assert section_in({"plain": {"status": "measured"}}, plain) == {"status": "measured"}
    assert section_in({}, plain) == {"status": NOT_MEASURED_YET} and section_in({"plain": None}, plain)["status"]
    assert plain.console({}) == [] and plain.figures({}) == {} and plain.files == () and plain.page is None
