"""Logs finished run directories to an MLflow tracking store: the flattened config as params, the headline
figures as metrics, what the run was (arch, runtime, precision, weights, CPU) as tags, and the directory itself
as artifacts. It reads only the files of the directory, so a run is logged the same whether the benchmark that
wrote it does it at its end, a sweep does it for its points, or a user does it later by hand.

mlflow is imported on first use: runs that do not track never pay its import time.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional
from urllib.parse import urlparse

from utils.core.errors import EnvironmentFault
from utils.storage.finished_run import FinishedRun, RunFilesError
from utils.reporting.run_figures import flatten, headline_figures, weights_kind

DEFAULT_EXPERIMENT = "detbench"
PARENT_TAG = "mlflow.parentRunId"  # what makes a run a child of another in MLflow's UI and searches
ARTIFACTS_FOLDER = "mlartifacts"  # beside a sqlite database, as `mlflow server` keeps them by default
BATCH_LIMIT = 100  # MLflow's largest number of params in one log_batch call
# An unreachable server fails in well under a minute, not the minutes of MLflow's default retries; a user's own
# setting of these variables wins.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


class TrackingError(EnvironmentFault):
    """The tracking store could not be reached or refused the run; the run directory itself is untouched."""


@dataclass(frozen=True)
class RunFields:
    name: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    status: str  # MLflow's run status
    ended_ms: Optional[int]


def param_text(value: Any) -> str:
    """A param as MLflow stores it (text): None and booleans as in the YAML config, null, true and false."""
    return value if isinstance(value, str) else json.dumps(value)


def _status(summary: Mapping[str, Any]) -> str:
    return {"complete": "FINISHED", "interrupted": "KILLED"}.get(summary.get("status"), "FAILED")


def _utc_ms(stamp: Optional[str]) -> Optional[int]:
    return round(dt.datetime.fromisoformat(stamp).timestamp() * 1000) if stamp else None


def run_fields(run_dir: Path) -> RunFields:
    """What MLflow gets from a run directory: a pure function of summary.json, config.yaml and env.json."""
    try:
        run = FinishedRun(run_dir)
        summary, environment, config = run.summary, run.environment(), run.config()
    except RunFilesError as error:
        raise TrackingError(str(error)) from None
    runtime = summary.get("runtime") or {}
    tags = {
        "detbench_run_id": summary.get("run_id"),
        "status": summary.get("status"),
        "arch": summary.get("model"),
        "family": summary.get("family"),
        "runtime_backend": runtime.get("backend"),
        "precision": runtime.get("precision"),
        "weights_kind": weights_kind(summary),
        "weights": summary.get("weights"),
        "cpu_model": environment.get("cpu_model"),
        "logical_cores": environment.get("logical_cores"),
        "git_commit": environment.get("git_commit"),
        "detbench_version": summary.get("detbench_version"),
        "agreement_verdict": (summary.get("agreement") or {}).get("verdict"),
    }
    return RunFields(
        name=str(summary.get("run_id") or run.name),
        params={key: param_text(value) for key, value in flatten(config or {}).items()},
        metrics=headline_figures(summary),
        tags={key: str(value) for key, value in tags.items() if value is not None},
        status=_status(summary),
        ended_ms=_utc_ms(summary.get("ended_utc")),
    )


def artifact_location(tracking_uri: str) -> Optional[str]:
    """Where a new experiment keeps its artifacts: beside a sqlite database (MLflow's default would be the
    current directory); a server or another database decides for itself."""
    parsed = urlparse(tracking_uri)
    if parsed.scheme != "sqlite":
        return None
    database = Path(tracking_uri.split("://", 1)[1][1:])  # sqlite:///rel.db -> rel.db, sqlite:////abs.db -> /abs.db
    return (database.parent.resolve() / ARTIFACTS_FOLDER).as_uri()


def _client(tracking_uri: str):
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    from mlflow.tracking import MlflowClient

    if urlparse(tracking_uri).scheme == "sqlite":
        Path(tracking_uri.split("://", 1)[1][1:]).parent.mkdir(parents=True, exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri)


def _experiment_id(client, tracking_uri: str, experiment: str) -> str:
    found = client.get_experiment_by_name(experiment)
    if found is not None:
        return found.experiment_id
    return client.create_experiment(experiment, artifact_location=artifact_location(tracking_uri))


def _failure(what: str, tracking_uri: str, error: Exception) -> TrackingError:
    reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return TrackingError(f"could not {what} in MLflow at {tracking_uri}: {type(error).__name__}: {reason}")


def log_run_directory(run_dir: str | Path, tracking_uri: str, experiment: str = DEFAULT_EXPERIMENT,
                      parent_run_id: Optional[str] = None) -> str:
    """Logs one run directory as a new MLflow run (a child of `parent_run_id` when given); returns its id.
    Raises TrackingError, naming the store and the cause, when the store cannot be reached or refuses it."""
    fields = run_fields(Path(run_dir))
    try:
        from mlflow.entities import Metric

        client = _client(tracking_uri)
        tags = dict(fields.tags, **({PARENT_TAG: parent_run_id} if parent_run_id else {}))
        run = client.create_run(_experiment_id(client, tracking_uri, experiment), run_name=fields.name, tags=tags)
        run_id = run.info.run_id
        stamp = fields.ended_ms or run.info.start_time
        _log_params(client, run_id, fields.params)
        client.log_batch(run_id, metrics=[Metric(key, value, stamp, 0) for key, value in fields.metrics.items()])
        client.log_artifacts(run_id, str(run_dir))
        client.set_terminated(run_id, fields.status)
    except Exception as error:  # MLflow, SQLAlchemy, requests and OS errors alike: the store failed, not the run
        raise _failure(f"log {run_dir}", tracking_uri, error) from error
    return run_id


@contextmanager
def sweep_run(tracking_uri: str, name: str, experiment: str = DEFAULT_EXPERIMENT,
              params: Optional[Mapping[str, Any]] = None, tags: Optional[Mapping[str, Any]] = None) -> Iterator[str]:
    """Opens a parent run for a sweep and yields its id: log each point with
    `log_run_directory(point_dir, tracking_uri, experiment, parent_run_id=id)`. The parent ends FINISHED,
    or KILLED / FAILED when the body is stopped or raises. Points run with outputs.mlflow.tracking_uri unset,
    or they would also log themselves as runs of their own."""
    try:
        client = _client(tracking_uri)
        run_id = client.create_run(_experiment_id(client, tracking_uri, experiment), run_name=name,
                                   tags={key: str(value) for key, value in (tags or {}).items()}).info.run_id
        _log_params(client, run_id, {key: param_text(value) for key, value in flatten(params or {}).items()})
    except Exception as error:
        raise _failure(f"open the sweep run {name}", tracking_uri, error) from error
    try:
        yield run_id
    except BaseException as stop:
        try:
            client.set_terminated(run_id, "KILLED" if isinstance(stop, KeyboardInterrupt) else "FAILED")
        except Exception:  # the body's own exception is the one to report; the store's is secondary
            pass
        raise
    try:
        client.set_terminated(run_id, "FINISHED")
    except Exception as error:
        raise _failure(f"close the sweep run {name}", tracking_uri, error) from error


def _log_params(client, run_id: str, params: Mapping[str, str]) -> None:
    from mlflow.entities import Param

    entries = [Param(key, value) for key, value in params.items()]
    for start in range(0, len(entries), BATCH_LIMIT):
        client.log_batch(run_id, params=entries[start:start + BATCH_LIMIT])
