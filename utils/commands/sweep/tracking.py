"""A sweep in MLflow: one parent run for the sweep, each finished point logged under it as a child run.

The points themselves run with the tracking URI unset, so no point logs itself a second time. A store that
cannot be reached costs the sweep nothing but its MLflow record: the console says so, the points go on.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Callable, Iterator, Optional

from utils.config.schema import MlflowSection
from utils.tracking.mlflow_runs import TrackingError, log_run_directory, sweep_run

# Given to every point: the sweep logs them as children instead.
POINT_OVERRIDE = "outputs.mlflow.tracking_uri=null"


class SweepTracking:
    def __init__(self, settings: MlflowSection, console: Callable[[str], None]):
        self.settings = settings
        self.console = console
        self.parent_id: Optional[str] = None

    @contextmanager
    def parent(self, name: str, swept: dict[str, list]) -> Iterator["SweepTracking"]:
        with ExitStack() as stack:
            try:
                self.parent_id = stack.enter_context(sweep_run(self.settings.tracking_uri, name,
                                                               self.settings.experiment, params={"sweep": swept},
                                                               tags={"kind": "sweep"}))
                self.console(f"MLflow: sweep run {self.parent_id} in experiment {self.settings.experiment}")
            except TrackingError as error:
                self.console(f"WARNING: MLflow logging is off for this sweep: {error}")
            yield self

    def log_point(self, status: str, run_dir, name: str) -> None:
        if self.parent_id is None or status != "complete":
            return
        try:
            log_run_directory(run_dir, self.settings.tracking_uri, self.settings.experiment,
                              parent_run_id=self.parent_id)
        except TrackingError as error:
            self.console(f"WARNING: MLflow: point {name} not logged: {error}")
