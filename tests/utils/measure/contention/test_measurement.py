"""Contention as a measurement (utils/measure/contention/measurement.py): its window around each timed pass, and a
warning joining the run when other processes took much of its cores, judged against the run's thread count. The
recorder and the verdict themselves: test_recorder.py."""
from utils.measure.contention import measurement
from utils.record.run_record import RunRecord
from tests.support.run_identity import identity


class StandIn:
    def summary(self):
        return {"status": "measured", "other_processes_cpu_share": 0.6}


def test_its_window_is_around_each_pass_and_a_busy_machine_warns(monkeypatch):
    recording = measurement.build(None)
    assert recording.around_pass() is recording.recorder
    recording.recorder = StandIn()
    judged = []
    monkeypatch.setattr(measurement, "with_thread_advice", lambda section: {**section, "free_cores": 0.8})
    monkeypatch.setattr(measurement, "contention_verdict",
                        lambda section, threads: judged.append((section["free_cores"], threads)) or "busy machine")
    record = RunRecord(identity(threads=2))
    result = recording.collect(record)
    assert judged == [(0.8, 2)] and record.warnings == ["busy machine"] and result.section["free_cores"] == 0.8
    monkeypatch.setattr(measurement, "contention_verdict", lambda section, threads: None)
    quiet = RunRecord(identity())
    recording.collect(quiet)
    assert quiet.warnings == []
