"""Logging a finished run directory to MLflow. The directory is the result: a store that cannot be reached
leaves it as it is, with the command that logs it later."""
from __future__ import annotations

import signal
from pathlib import Path
from typing import Any, Callable, Optional

from utils.core.errors import ExitStatus
from utils.core.interruption import RunStops, signal_of
from utils.tracking.mlflow_runs import TrackingError, log_run_directory


def log_to_mlflow(run_dir: Path, settings: Any, stops: RunStops,
                  console: Callable[[str], None]) -> Optional[ExitStatus]:
    """The exit status a stop during logging asks for; None when the logging ended on its own."""
    console(f"Logging the run to MLflow at {settings.tracking_uri} (experiment {settings.experiment})...")
    try:
        with stops.ending_passes():
            run_id = log_run_directory(run_dir, settings.tracking_uri, settings.experiment)
    except TrackingError as error:
        console(f"WARNING: MLflow logging failed: {error}. The run directory is complete; log it later with: "
                f"python -c \"from utils.tracking.mlflow_runs import log_run_directory; "
                f"log_run_directory('{run_dir}', '{settings.tracking_uri}', '{settings.experiment}')\"")
        return None
    except KeyboardInterrupt as stop:
        console(f"MLflow logging stopped ({signal.Signals(signal_of(stop)).name}); the run directory is "
                "complete, the MLflow run may be left unfinished")
        return ExitStatus.stopped_by(signal_of(stop))
    console(f"MLflow: logged as run {run_id} in experiment {settings.experiment}")
    return None
