"""utils.commands.sweep.tracking: a sweep in MLflow: one parent run for the sweep, each complete point logged under it as
a child; a store that cannot be reached costs the sweep only its MLflow record.

Tested with the MLflow calls replaced by fakes (test_tracking covers them against a real store): what is logged
and with which parent, that failed points are not logged, and the console's warnings when the store fails."""
from contextlib import contextmanager

import pytest

from utils.config.schema import MlflowSection
from utils.commands.sweep import tracking
from utils.commands.sweep.tracking import SweepTracking
from utils.tracking.mlflow_runs import TrackingError

SETTINGS = MlflowSection(tracking_uri="sqlite:///outputs/mlflow.db", experiment="sweeps")


@pytest.fixture
def store(monkeypatch):
    """The calls the sweep made, and the failures to raise for each."""
    calls = {"parents": [], "points": [], "fail_parent": None, "fail_point": None}

    @contextmanager
    def sweep_run(uri, name, experiment, params, tags):
        if calls["fail_parent"]:
            raise TrackingError(calls["fail_parent"])
        calls["parents"].append((uri, name, experiment, params, tags))
        yield "parent-1"

    def log_run_directory(run_dir, uri, experiment, parent_run_id):
        if calls["fail_point"]:
            raise TrackingError(calls["fail_point"])
        calls["points"].append((run_dir, uri, experiment, parent_run_id))

    monkeypatch.setattr(tracking, "sweep_run", sweep_run)
    monkeypatch.setattr(tracking, "log_run_directory", log_run_directory)
    return calls


def test_complete_points_are_logged_under_the_sweeps_parent(store):
    lines = []
    sweep = SweepTracking(SETTINGS, lines.append)
    with sweep.parent("sweep_a", {"dataset.batch_size": [1, 4]}):
        sweep.log_point("complete", "outputs/sweep_a/p1", "p1")
        sweep.log_point("failed", "outputs/sweep_a/p2", "p2")
    assert store["parents"] == [("sqlite:///outputs/mlflow.db", "sweep_a", "sweeps",
                                 {"sweep": {"dataset.batch_size": [1, 4]}}, {"kind": "sweep"})]
    assert store["points"] == [("outputs/sweep_a/p1", "sqlite:///outputs/mlflow.db", "sweeps", "parent-1")]
    assert lines == ["MLflow: sweep run parent-1 in experiment sweeps"]


def test_an_unreachable_store_turns_logging_off_and_the_sweep_goes_on(store):
    store["fail_parent"] = "cannot open sqlite:///outputs/mlflow.db"
    lines, ran = [], []
    sweep = SweepTracking(SETTINGS, lines.append)
    with sweep.parent("sweep_a", {}):
        ran.append(True)
        sweep.log_point("complete", "outputs/sweep_a/p1", "p1")
    assert ran == [True] and sweep.parent_id is None and store["points"] == []
    assert lines == ["WARNING: MLflow logging is off for this sweep: cannot open sqlite:///outputs/mlflow.db"]


def test_a_point_the_store_refuses_is_a_warning_naming_it(store):
    store["fail_point"] = "store refused the run"
    lines = []
    sweep = SweepTracking(SETTINGS, lines.append)
    with sweep.parent("sweep_a", {}):
        sweep.log_point("complete", "outputs/sweep_a/p1", "p1")
    assert lines[-1] == "WARNING: MLflow: point p1 not logged: store refused the run"
