"""utils.checks.run_checks: the checks after the measured passes: the accuracy pass, and for a runtime other than
the reference the agreement check against the torch fp32 reference, each inside the run's stop handling.

Tested with the two checks and the reference replaced by fakes that note their calls (the checks themselves
have tests of their own): which run when, what reaches the run record, and that both read the one built run."""
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from utils.checks import run_checks as checks
from utils.record.run_record import RunIdentity, RunRecord


class Stops:
    def __init__(self):
        self.entered = 0

    @contextmanager
    def ending_passes(self):
        self.entered += 1
        yield


@pytest.fixture
def calls(monkeypatch):
    noted = {"accuracy": [], "agreement": [], "runs": [], "result": None}
    monkeypatch.setattr(checks, "Reference", lambda family, sections: ("reference", family, sections))

    def accuracy_pass(run, reference, recorders, console):
        noted["accuracy"].append(reference)
        noted["runs"].append(run)
        return noted["result"]

    def agreement_check(run, reference, accuracy, console):
        noted["agreement"].append((reference, accuracy))
        noted["runs"].append(run)
        return {"verdict": "same"}, ["agreement: 1 image differs"]

    monkeypatch.setattr(checks, "run_accuracy_pass", accuracy_pass)
    monkeypatch.setattr(checks, "run_agreement_check", agreement_check)
    return noted


def record():
    return RunRecord(RunIdentity(run_id="r", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                                 weights="random (seed 0)", random_weights=True, seed=0, img_size=64, batch_size=1,
                                 runtime={"backend": "openvino"}, step_order=("pipeline",)))


def run(with_reference, built=None):
    run_record, stops = record(), Stops()
    # The fields of a BuiltRun the checks' root reads itself; the checks get the whole of it.
    built = built or SimpleNamespace(family="yolo", sections="sections")
    checks.run_checks(built, with_reference, None, run_record, stops, print)
    return run_record, stops


def test_the_reference_runtime_runs_the_accuracy_pass_alone(calls):
    run_record, stops = run(with_reference=False)
    assert calls["accuracy"] == [None] and calls["agreement"] == []
    assert run_record.accuracy is None and run_record.agreement is None and stops.entered == 1


def test_another_runtime_is_checked_against_the_reference_with_its_accuracy(calls):
    calls["result"] = SimpleNamespace(summary={"map_50_95": 0.4}, classes="per-class table")
    run_record, stops = run(with_reference=True)
    assert calls["accuracy"] == [("reference", "yolo", "sections")]  # of the run's family, from its sections
    assert calls["agreement"] == [(("reference", "yolo", "sections"), {"map_50_95": 0.4})]
    assert (run_record.accuracy, run_record.accuracy_classes) == ({"map_50_95": 0.4}, "per-class table")
    assert run_record.agreement == {"verdict": "same"}
    assert run_record.warnings == ["agreement: 1 image differs"]
    assert stops.entered == 2


def test_both_checks_read_the_same_built_run(calls):
    built = SimpleNamespace(family="yolo", sections="sections")
    run(with_reference=True, built=built)
    assert len(calls["runs"]) == 2 and all(seen is built for seen in calls["runs"])
