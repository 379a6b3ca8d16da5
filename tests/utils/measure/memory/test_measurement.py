"""Memory as a measurement (utils/measure/memory/measurement.py): switched off by its config, sampled inside the
passes it listens in only, its timeline growing through the journal, and its tables collected whole. The sampler
itself: test_recorder.py."""
from utils.config.schema import MemorySection as MemorySettings
from utils.measure.contract import Disabled
from utils.measure.memory.files import MEMORY, MEMORY_STEPS
from utils.measure.memory.measurement import MemoryRecording, build
from utils.record.run_record import RunRecord
from tests.support.run_identity import identity


class StandIn:
    """The sampler's face, noting what the measurement asks of it."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *arguments: self.calls.append(name) or ([{"rss_mb": 1.0}] if name.endswith("rows") else None)

    def __enter__(self):
        self.calls.append("started")

    def __exit__(self, *_):
        self.calls.append("stopped")

    def summary(self):
        return {"status": "measured"}


def test_switched_off_by_its_config_it_says_so():
    off = build(MemorySettings(enabled=False))
    assert isinstance(off, Disabled) and off.collect(RunRecord(identity())).section == {"status": "disabled"}


def test_sampled_inside_the_passes_only_and_its_tables_grow_through_the_journal():
    recording = MemoryRecording(MemorySettings(interval_s=0.5))
    sampler = recording.sampler = StandIn()
    with recording.running():
        assert sampler.calls == ["started", "mark_baseline", "pause"]
        with recording.inside_pass():
            assert sampler.calls[-1] == "resume"
        assert sampler.calls[-1] == "pause"
    assert sampler.calls[-1] == "stopped"
    assert [table.file for table in recording.growing_tables()] == [MEMORY, MEMORY_STEPS]
    result = recording.collect(RunRecord(identity()))
    assert result.section == {"status": "measured"} and set(result.tables) == {MEMORY, MEMORY_STEPS}
    assert result.tables[MEMORY].rows == [{"rss_mb": 1.0}]
