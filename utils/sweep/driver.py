"""Runs a sweep: every point validated first, then each one in its own benchmark.py process, started by a
launcher (utils/sweep/launchers: one process after another here, or one task per point on a Ray cluster), its
figures read back from its run directory, and sweep.csv / sweep.json rewritten after every point so that nothing
finished is lost.

Ctrl-C or SIGTERM is passed on to the running point(s), which write what they measured; the points not run yet
are recorded as stopped and the sweep's files are still written.
"""
from __future__ import annotations

import json
import signal
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from tqdm import tqdm

from utils.config import ConfigError, load_config
from utils.errors import ExitStatus
from utils.readers.finished_run import FinishedRun, RunFilesError
from utils.sweep.answer import PointFigures, choose
from utils.sweep.figures import read_point
from utils.sweep.launchers.base import Launcher, PointJob, PointOutcome, Stops
from utils.sweep.launchers.local import LocalLauncher
from utils.sweep.plan import PLACEMENT_KEY, Point, SweepError, expand
from utils.sweep.tracking import POINT_OVERRIDE, SweepTracking
from utils.writers import layout
from utils.writers.atomic import OutputWriteError, atomic_write_text
from utils.writers.run_directory import RunDirectory
from utils.writers.sweep_files import sweep_columns, write_sweep_report, write_sweep_tables

REASON_CHARS = 600


@dataclass
class PointResult:
    point: Point
    run_dir: Path
    status: str = "pending"  # complete, failed or stopped once decided
    reason: str = ""
    figures_row: dict = field(default_factory=dict)
    figures: Optional[PointFigures] = None
    placement: dict = field(default_factory=dict)  # where the launcher ran it (its columns of sweep.csv)

    def row(self, sweep_dir: Path) -> dict:
        return {"point": self.point.name, **self.point.values, "status": self.status, "reason": self.reason,
                **self.figures_row, **self.placement, "run_dir": str(self.run_dir.relative_to(sweep_dir))}


def stderr_reason(stderr: str) -> str:
    """The end of a point's error output: from its last `error:` or traceback on, else its last lines."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.startswith(("error:", "Traceback"))]
    tail = lines[starts[-1]:] if starts else lines[-3:]
    if len(tail) > 4 and tail[0].startswith("Traceback"):
        tail = tail[-1:]  # the exception itself says more than the frames
    text = " ".join(line.strip() for line in tail)
    return text if len(text) <= REASON_CHARS else "..." + text[-REASON_CHARS:]


def exit_reason(code: int, stderr: str) -> str:
    tail = stderr_reason(stderr) or "no error output"
    if code == 2:
        return f"cannot run (exit 2): {tail}"
    if code == 1:
        return f"an output could not be written (exit 1): {tail}"
    if code < 0:
        return f"killed by {signal.Signals(-code).name}: {tail}"
    return f"crashed (exit {code}): {tail}"


class Sweep:
    def __init__(self, config_file: str, overrides: list[str], sweep_arguments: list[str],
                 console: Callable[[str], None] = print, launcher: Optional[Launcher] = None):
        self.config_file = config_file
        self.overrides = list(overrides)
        self.sweep_arguments = list(sweep_arguments)
        self.console = console
        self.launcher = launcher or LocalLauncher()
        # Called with each point's result once its process has ended, whatever its status.
        self.on_point_finished: list[Callable[[PointResult], None]] = []

    def prepare(self) -> None:
        """Every point's configuration is validated before anything runs or is written: one bad key or value
        refuses the whole sweep, as does a launcher that cannot run them. Raises SweepError, ConfigError,
        LauncherError or RunDirectoryError (exit status 2)."""
        self.axes, self.points = expand(self.sweep_arguments)
        if not self.launcher.places_points and any(point.node for point in self.points):
            raise SweepError(f"--sweep {PLACEMENT_KEY}=...: points are placed on machines only by --launcher ray "
                             f"(this sweep's launcher is {self.launcher.name}); drop that --sweep or add "
                             "--launcher ray")
        base = load_config(self.config_file, self.overrides)
        for point in self.points:
            try:
                load_config(self.config_file, self.overrides + point.overrides)
            except ConfigError as error:
                raise ConfigError(f"sweep point {point.name} is refused, so nothing ran:\n{error}") from None
        self.mlflow = base.outputs.mlflow if base.outputs.mlflow.tracking_uri else None
        self.directory = RunDirectory(base.run.output_dir, base.run.id)
        self.results = [PointResult(point, self.directory.path / point.name) for point in self.points]
        self.jobs = [PointJob(point.name, tuple(self.arguments(point)), self.directory.path / point.name,
                              point.node) for point in self.points]
        self.launcher.open()
        try:
            self.launcher.check(self.jobs)
            self.directory.create()
        except BaseException:
            self.launcher.close()
            raise

    def arguments(self, point: Point) -> list[str]:
        """benchmark.py's arguments for the point; the launcher adds where its run directory goes."""
        sets = [*self.overrides, *point.overrides, *([POINT_OVERRIDE] if self.mlflow else []),
                # JSON strings are YAML strings: the values stay text whatever characters they hold.
                f"run.id={json.dumps(point.name)}"]
        return ["--config", self.config_file, *(part for assignment in sets for part in ("--set", assignment))]

    def run(self) -> int:
        stops = Stops()
        try:
            with stops.handled(), self._tracked():
                self._run_points(stops)
                for result in self.results:
                    if result.status == "pending":
                        result.status = "stopped"
                        result.reason = f"not run: the sweep was stopped by {signal.Signals(stops.received).name}"
                document = self._write_tables(stopped=stops.received)
                write_sweep_report(self.directory.path, document, self._rows(), self._columns())
        except OutputWriteError as error:
            self.console(f"error: {error}; the sweep's points are in {self.directory.path}")
            return ExitStatus.FAILED
        finally:
            self.launcher.close()
        self.console(f"sweep {self.directory.run_id}: {self._counts()}")
        self.console(document["answer"]["statement"])
        self.console(f"outputs: {self.directory.path} ({layout.SWEEP_CSV}, {layout.SWEEP_JSON}, "
                     f"{layout.SWEEP_REPORT})")
        return ExitStatus.stopped_by(stops.received) if stops.received else ExitStatus.OK

    @contextmanager
    def _tracked(self) -> Iterator[None]:
        if self.mlflow is None:
            yield
            return
        tracking = SweepTracking(self.mlflow, self.console)
        with tracking.parent(self.directory.run_id, {axis.key: list(axis.values) for axis in self.axes}):
            listener = lambda result: tracking.log_point(result.status, result.run_dir, result.point.name)  # noqa: E731
            self.on_point_finished.append(listener)
            try:
                yield
            finally:
                self.on_point_finished.remove(listener)

    def _run_points(self, stops: Stops) -> None:
        self._write_tables(stopped=None)
        results = {result.point.name: result for result in self.results}
        with tqdm(total=len(self.results), unit="point", disable=None) as progress:
            def started(job: PointJob, where: str) -> None:
                progress.set_postfix_str(job.name, refresh=True)
                if where:
                    tqdm.write(f"{job.name}: started on {where}")

            def finished(job: PointJob, outcome: PointOutcome) -> None:
                result = results[job.name]
                self._settle(result, outcome, stops)
                progress.update()
                tqdm.write(self._line(result))
                for listener in self.on_point_finished:
                    listener(result)
                self._write_tables(stopped=None)

            self.launcher.run(self.jobs, stops, started, finished)

    def _settle(self, result: PointResult, outcome: PointOutcome, stops: Stops) -> None:
        result.placement = outcome.placement
        code = outcome.returncode
        if code is not None or outcome.stdout or outcome.stderr:
            logs = self.directory.path / layout.SWEEP_LOGS_DIR
            atomic_write_text(logs / f"{result.point.name}.stdout.txt", outcome.stdout)
            atomic_write_text(logs / f"{result.point.name}.stderr.txt", outcome.stderr)
        if code is None:  # it never ran, or its process or its files were lost on the way
            result.status, result.reason = ("stopped" if outcome.stopped else "failed"), outcome.lost
            return
        if code == 0:
            self._read(result)  # a point that completed as the stop arrived keeps its figures
        elif stops.received or code in (ExitStatus.INTERRUPTED, ExitStatus.TERMINATED):
            result.status = "stopped"
            result.reason = "stopped while it ran; what it measured is in its run directory"
        else:
            result.status, result.reason = "failed", exit_reason(code, outcome.stderr)

    def _read(self, result: PointResult) -> None:
        try:
            run = FinishedRun(result.run_dir)
            if run.summary.get("status") != "complete":
                result.status = "failed"
                result.reason = f"the run ended {run.summary.get('status')}: {run.summary.get('stop_reason')}"
                return
            result.figures_row, result.figures = read_point(result.point, run)
            result.status = "complete"
        except (RunFilesError, ValueError, KeyError) as error:
            result.status, result.reason = "failed", f"finished, but its files cannot be read: {error}"

    def _line(self, result: PointResult) -> str:
        if result.status != "complete":
            return f"{result.point.name}: {result.status} ({result.reason})"
        row = result.figures_row
        return (f"{result.point.name}: {row['p50_ms_per_image']:.1f} ms/image p50, "
                f"{row['images_per_s']:.2f} images/s, detections {row['agreement']}")

    def _columns(self) -> list[str]:
        return sweep_columns([axis.key for axis in self.axes], self.launcher.columns)

    def _rows(self) -> list[dict]:
        return [result.row(self.directory.path) for result in self.results]

    def _counts(self) -> str:
        statuses = [result.status for result in self.results]
        return ", ".join(f"{statuses.count(s)} {s}" for s in ("complete", "failed", "stopped", "pending")
                         if statuses.count(s))

    def _write_tables(self, stopped: Optional[int]) -> dict:
        finished = all(result.status != "pending" for result in self.results)
        status = "stopped" if stopped else "complete" if finished else "running"
        document = {
            "sweep_id": self.directory.run_id,
            "status": status,
            "stop_reason": signal.Signals(stopped).name if stopped else None,
            "config_file": self.config_file,
            "overrides": self.overrides,
            "launcher": self.launcher.describe(),
            "swept": {axis.key: list(axis.values) for axis in self.axes},
            "points": len(self.results),
            "answer": choose([result.figures for result in self.results if result.figures is not None]),
            "rows": self._rows(),
        }
        write_sweep_tables(self.directory.path, document, self._rows(), self._columns())
        return document
