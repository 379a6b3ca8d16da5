"""Logging a finished run to MLflow as a step of the run (utils/tracking/mlflow_step.py): where it went, a store that
cannot be reached leaving the run as it is with the command that logs it later, and a stop during logging ending in
its signal's status. MLflow itself, on a real store: test_mlflow_runs.py."""
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from utils.core.errors import ExitStatus
from utils.core.interruption import RunStops, Stopped
from utils.tracking import mlflow_step
from utils.tracking.mlflow_runs import TrackingError

SETTINGS = SimpleNamespace(tracking_uri="sqlite:///store.db", experiment="tests")
RUN = Path("outputs/r1")


def logging_with(monkeypatch, outcome):
    def log_run_directory(run_dir, uri, experiment):
        assert (run_dir, uri, experiment) == (RUN, SETTINGS.tracking_uri, SETTINGS.experiment)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(mlflow_step, "log_run_directory", log_run_directory)
    said = []
    with RunStops(said.append).handled() as stops:
        status = mlflow_step.log_to_mlflow(RUN, SETTINGS, stops, said.append)
    return status, said


def test_a_logged_run_says_where_it_went_and_asks_for_no_status(monkeypatch):
    status, said = logging_with(monkeypatch, "abc123")
    assert status is None
    assert said == ["Logging the run to MLflow at sqlite:///store.db (experiment tests)...",
                    "MLflow: logged as run abc123 in experiment tests"]


def test_a_store_that_fails_leaves_the_run_complete_with_the_command_that_logs_it_later(monkeypatch):
    status, said = logging_with(monkeypatch, TrackingError("MLflow at sqlite:///store.db did not answer"))
    assert status is None and said[-1].startswith("WARNING: MLflow logging failed: MLflow at sqlite:///store.db")
    assert "log_run_directory('outputs/r1', 'sqlite:///store.db', 'tests')" in said[-1]


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_logging_ends_in_its_signals_status(monkeypatch, number):
    status, said = logging_with(monkeypatch, Stopped(number))
    assert status == ExitStatus.stopped_by(number)
    assert said[-1].startswith(f"MLflow logging stopped ({signal.Signals(number).name}); the run directory is complete")
