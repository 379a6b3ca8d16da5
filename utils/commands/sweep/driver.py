"""Runs a sweep: every point validated first, then each one in its own benchmark.py process, started by a
launcher (utils/launchers: one process after another here, or one task per point on a Ray cluster), its
figures read back from its run directory, and sweep.csv / sweep.json rewritten after every point so that nothing
finished is lost. With `--rounds N` every point runs N times, the rounds interleaved (utils.commands.sweep.plan.round_order)
and combined into the point's row (utils.commands.sweep.figures.combine_rounds).

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

from utils.config.schema import ConfigError, load_config
from utils.core.errors import STOPPED, ExitStatus
from utils.storage.finished_run import FinishedRun, RunFilesError
from utils.commands.sweep.answer import PointFigures, choose
from utils.commands.sweep.figures import combine_rounds, point_line, read_point
from utils.launchers.base import Launcher, PointJob, PointOutcome, Stops
from utils.launchers.local import LocalLauncher
from utils.commands.sweep.plan import PLACEMENT_KEY, Point, SweepError, expand, round_name, round_order
from utils.commands.sweep.tracking import POINT_OVERRIDE, SweepTracking
from utils.storage import layout
from utils.storage.atomic import OutputWriteError, atomic_write_text
from utils.storage.run_directory import RunDirectory
from utils.commands.sweep.files import sweep_columns, write_sweep_report, write_sweep_tables

REASON_CHARS = 600


@dataclass
class RoundRun:
    """One run of a point: its only one, or one of its `--rounds`."""

    number: int
    run_dir: Path
    status: str = "pending"  # complete, failed or stopped once decided
    reason: str = ""
    figures_row: dict = field(default_factory=dict)
    figures: Optional[PointFigures] = None
    placement: dict = field(default_factory=dict)  # where the launcher ran it (its columns of sweep.csv)


@dataclass
class PointResult:
    point: Point
    runs: list[RoundRun]
    status: str = "pending"  # complete, failed or stopped once every round is decided
    reason: str = ""
    figures_row: dict = field(default_factory=dict)
    figures: Optional[PointFigures] = None

    @property
    def run_dir(self) -> Path:
        return self.runs[0].run_dir

    def settle(self) -> None:
        """The point's status from its rounds': failed if one failed, stopped if one was stopped, complete when
        all completed; the figures combine the completed rounds."""
        if any(run.status == "pending" for run in self.runs):
            return
        done = [run for run in self.runs if run.status == "complete"]
        for status in ("failed", "stopped"):
            hit = next((run for run in self.runs if run.status == status), None)
            if hit is not None:
                self.status = status
                self.reason = hit.reason if len(self.runs) == 1 else f"round {hit.number}: {hit.reason}"
                break
        else:
            self.status, self.reason = "complete", ""
        if self.status == "complete":
            self.figures_row, self.figures = combine_rounds([run.figures_row for run in done],
                                                            [run.figures for run in done])
        elif len(self.runs) == 1:
            self.figures_row = self.runs[0].figures_row  # a killed run's batches (_read_killed), shown, not ranked

    def row(self, sweep_dir: Path) -> dict:
        row = {"point": self.point.name, **self.point.values, "status": self.status, "reason": self.reason,
               **self.figures_row, **self.runs[0].placement, "run_dir": str(self.run_dir.relative_to(sweep_dir))}
        if len(self.runs) > 1:
            row["round_run_dirs"] = [str(run.run_dir.relative_to(sweep_dir)) for run in self.runs]
        return row


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


def settle_run(sweep_dir: Path, point: Point, result: RoundRun, outcome: PointOutcome, stops: Stops) -> None:
    """A run's status, reason and figures from its process's outcome; its console output kept in logs/."""
    result.placement = outcome.placement
    code = outcome.returncode
    if code is not None or outcome.stdout or outcome.stderr:
        logs = sweep_dir / layout.SWEEP_LOGS_DIR
        atomic_write_text(logs / f"{result.run_dir.name}.stdout.txt", outcome.stdout)
        atomic_write_text(logs / f"{result.run_dir.name}.stderr.txt", outcome.stderr)
    if code is None:  # it never ran, or its process or its files were lost on the way
        result.status, result.reason = ("stopped" if outcome.stopped else "failed"), outcome.lost
        return
    if code == 0:
        _read(point, result)  # a run that completed as the stop arrived keeps its figures
    elif stops.received or code in STOPPED:
        result.status = "stopped"
        result.reason = "stopped while it ran; what it measured is in its run directory"
    else:
        result.status, result.reason = "failed", exit_reason(code, outcome.stderr)
        if code < 0:
            _read_killed(point, result)


def _read_killed(point: Point, result: RoundRun) -> None:
    """A point killed by a signal it could not handle (SIGKILL, the OOM killer): its reason says up to where its
    run directory holds, and sweep.csv shows the figures of its batches; it stays failed, never ranked."""
    try:
        run = FinishedRun(result.run_dir)
        if not run.killed:
            return
        result.reason += f"; {run.killed_note()}"
        result.figures_row = read_point(point, run)[0]
    except (RunFilesError, ValueError, KeyError):
        pass


def _read(point: Point, result: RoundRun) -> None:
    try:
        run = FinishedRun(result.run_dir)
        if run.summary.get("status") != "complete":
            result.status = "failed"
            result.reason = f"the run ended {run.summary.get('status')}: {run.summary.get('stop_reason')}"
            return
        result.figures_row, result.figures = read_point(point, run)
        result.status = "complete"
    except (RunFilesError, ValueError, KeyError) as error:
        result.status, result.reason = "failed", f"finished, but its files cannot be read: {error}"


class Sweep:
    def __init__(self, config_file: str, overrides: list[str], sweep_arguments: list[str],
                 console: Callable[[str], None] = print, launcher: Optional[Launcher] = None, rounds: int = 1):
        self.config_file = config_file
        self.overrides = list(overrides)
        self.sweep_arguments = list(sweep_arguments)
        self.console = console
        self.launcher = launcher or LocalLauncher()
        self.rounds = rounds
        # Called with each run (a point's, or one round of it) once its process has ended, whatever its status.
        self.on_point_finished: list[Callable[[str, RoundRun], None]] = []

    def prepare(self) -> None:
        """Every point's configuration is validated before anything runs or is written: one bad key or value
        refuses the whole sweep, as does a launcher that cannot run them. Raises SweepError, ConfigError,
        LauncherError or RunDirectoryError (exit status 2)."""
        self.axes, self.points = expand(self.sweep_arguments)
        order = round_order(self.points, self.rounds)
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
        self.results = [PointResult(point, [RoundRun(number, self.directory.path / round_name(point, number,
                                                                                          self.rounds))
                                            for number in range(1, self.rounds + 1)]) for point in self.points]
        by_point = {result.point.name: result for result in self.results}
        self.jobs, self._runs = [], {}
        for point, number in order:
            name = round_name(point, number, self.rounds)
            self.jobs.append(PointJob(name, tuple(self.arguments(point, name)), self.directory.path / name,
                                      point.node))
            self._runs[name] = (by_point[point.name], by_point[point.name].runs[number - 1])
        self.launcher.open()
        try:
            self.launcher.check(self.jobs)
            self.directory.create()
        except BaseException:
            self.launcher.close()
            raise

    def arguments(self, point: Point, run_id: str) -> list[str]:
        """benchmark.py's arguments for the point (one round of it: `run_id`); the launcher adds where its run
        directory goes."""
        sets = [*self.overrides, *point.overrides, *([POINT_OVERRIDE] if self.mlflow else []),
                # JSON strings are YAML strings: the values stay text whatever characters they hold.
                f"run.id={json.dumps(run_id)}"]
        return ["--config", self.config_file, *(part for assignment in sets for part in ("--set", assignment))]

    def run(self) -> int:
        stops = Stops()
        try:
            with stops.handled(), self._tracked():
                self._run_points(stops)
                for result in self.results:
                    for run in result.runs:
                        if run.status == "pending":
                            run.status = "stopped"
                            run.reason = f"not run: the sweep was stopped by {signal.Signals(stops.received).name}"
                    result.settle()
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
            listener = lambda name, run: tracking.log_point(run.status, run.run_dir, name)  # noqa: E731
            self.on_point_finished.append(listener)
            try:
                yield
            finally:
                self.on_point_finished.remove(listener)

    def _run_points(self, stops: Stops) -> None:
        self._write_tables(stopped=None)
        with tqdm(total=len(self.jobs), unit="run" if self.rounds > 1 else "point", disable=None) as progress:
            def started(job: PointJob, where: str) -> None:
                progress.set_postfix_str(job.name, refresh=True)
                if where:
                    tqdm.write(f"{job.name}: started on {where}")

            def finished(job: PointJob, outcome: PointOutcome) -> None:
                result, run = self._runs[job.name]
                settle_run(self.directory.path, result.point, run, outcome, stops)
                result.settle()
                progress.update()
                tqdm.write(self._line(job.name, run))
                for listener in self.on_point_finished:
                    listener(job.name, run)
                self._write_tables(stopped=None)

            self.launcher.run(self.jobs, stops, started, finished)

    def _line(self, name: str, result: RoundRun) -> str:
        if result.status != "complete":
            return f"{name}: {result.status} ({result.reason})"
        return f"{name}: {point_line(result.figures)}"

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
            "rounds": self.rounds,
            "answer": choose([result.figures for result in self.results if result.figures is not None]),
            "rows": self._rows(),
        }
        write_sweep_tables(self.directory.path, document, self._rows(), self._columns())
        return document
