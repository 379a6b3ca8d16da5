"""Runs a sweep: every point validated first, then each one in its own benchmark.py process (threads, OpenMP
settings and compile caches are process-wide, so points must not share one), its figures read back from its
run directory, and sweep.csv / sweep.json rewritten after every point so that nothing finished is lost.

Ctrl-C or SIGTERM is passed on to the running point, which writes what it measured; the points not run yet are
recorded as stopped and the sweep's files are still written.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional

from tqdm import tqdm

from utils.config import ConfigError, load_config
from utils.harness.interruption import exit_status
from utils.readers.finished_run import FinishedRun, RunFilesError
from utils.sweep.answer import PointFigures, choose
from utils.sweep.figures import read_point
from utils.sweep.plan import Point, expand
from utils.sweep.tracking import POINT_OVERRIDE, SweepTracking
from utils.writers import layout
from utils.writers.atomic import OutputWriteError, atomic_write_text
from utils.writers.run_directory import RunDirectory
from utils.writers.sweep_files import sweep_columns, write_sweep_report, write_sweep_tables

BENCHMARK_SCRIPT = Path(__file__).resolve().parents[2] / "benchmark.py"
EXIT_OK, EXIT_FAILED = 0, 1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
REASON_CHARS = 600


@dataclass
class PointResult:
    point: Point
    run_dir: Path
    status: str = "pending"  # complete, failed or stopped once decided
    reason: str = ""
    figures_row: dict = field(default_factory=dict)
    figures: Optional[PointFigures] = None

    def row(self, sweep_dir: Path) -> dict:
        return {"point": self.point.name, **self.point.values, "status": self.status, "reason": self.reason,
                **self.figures_row, "run_dir": str(self.run_dir.relative_to(sweep_dir))}


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


class _Stops:
    """The first stop signal is passed on to the running point; later ones only wait for it to finish."""

    def __init__(self):
        self.received: Optional[int] = None
        self.child: Optional[subprocess.Popen] = None

    def _handle(self, number: int, _frame) -> None:
        first = self.received is None
        self.received = self.received or number
        if first and self.child is not None and self.child.poll() is None:
            self.child.send_signal(number)

    @contextmanager
    def handled(self) -> Iterator["_Stops"]:
        # A SIGINT ignored by the shell that started us stays ignored, as in a single run.
        previous = {number: signal.signal(number, self._handle) for number in STOP_SIGNALS
                    if signal.getsignal(number) is not signal.SIG_IGN}
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


class Sweep:
    def __init__(self, config_file: str, overrides: list[str], sweep_arguments: list[str],
                 console: Callable[[str], None] = print):
        self.config_file = config_file
        self.overrides = list(overrides)
        self.sweep_arguments = list(sweep_arguments)
        self.console = console
        # Called with each point's result once its process has ended, whatever its status.
        self.on_point_finished: list[Callable[[PointResult], None]] = []

    def prepare(self) -> None:
        """Every point's configuration is validated before anything runs or is written: one bad key or value
        refuses the whole sweep. Raises SweepError, ConfigError or RunDirectoryError (exit status 2)."""
        self.axes, self.points = expand(self.sweep_arguments)
        base = load_config(self.config_file, self.overrides)
        for point in self.points:
            try:
                load_config(self.config_file, self.overrides + point.overrides)
            except ConfigError as error:
                raise ConfigError(f"sweep point {point.name} is refused, so nothing ran:\n{error}") from None
        self.mlflow = base.outputs.mlflow if base.outputs.mlflow.tracking_uri else None
        self.directory = RunDirectory(base.run.output_dir, base.run.id)
        self.directory.create()
        self.results = [PointResult(point, self.directory.path / point.name) for point in self.points]

    def command(self, point: Point) -> list[str]:
        sets = [*self.overrides, *point.overrides, *([POINT_OVERRIDE] if self.mlflow else []),
                # JSON strings are YAML strings: the values stay text whatever characters they hold.
                f"run.output_dir={json.dumps(str(self.directory.path))}", f"run.id={json.dumps(point.name)}"]
        return [sys.executable, str(BENCHMARK_SCRIPT), "--config", self.config_file,
                *(part for assignment in sets for part in ("--set", assignment))]

    def run(self) -> int:
        stops = _Stops()
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
            return EXIT_FAILED
        self.console(f"sweep {self.directory.run_id}: {self._counts()}")
        self.console(document["answer"]["statement"])
        self.console(f"outputs: {self.directory.path} ({layout.SWEEP_CSV}, {layout.SWEEP_JSON}, "
                     f"{layout.SWEEP_REPORT})")
        return exit_status(stops.received) if stops.received else EXIT_OK

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

    def _run_points(self, stops: _Stops) -> None:
        self._write_tables(stopped=None)
        with tqdm(total=len(self.results), unit="point", disable=None) as progress:
            for result in self.results:
                if stops.received:
                    return
                progress.set_postfix_str(result.point.name, refresh=True)
                self._run_point(result, stops)
                progress.update()
                tqdm.write(self._line(result))
                for listener in self.on_point_finished:
                    listener(result)
                self._write_tables(stopped=None)

    def _run_point(self, result: PointResult, stops: _Stops) -> None:
        # Its own session: a Ctrl-C at the terminal reaches the point once, through _Stops, not twice.
        child = subprocess.Popen(self.command(result.point), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        stops.child = child
        if stops.received:  # arrived between the check and the start: pass it on now
            child.send_signal(stops.received)
        stdout, stderr = child.communicate()
        stops.child = None
        logs = self.directory.path / layout.SWEEP_LOGS_DIR
        atomic_write_text(logs / f"{result.point.name}.stdout.txt", stdout)
        atomic_write_text(logs / f"{result.point.name}.stderr.txt", stderr)
        code = child.returncode
        if code == 0:
            self._read(result)  # a point that completed as the stop arrived keeps its figures
        elif stops.received or code in (exit_status(signal.SIGINT), exit_status(signal.SIGTERM)):
            result.status = "stopped"
            result.reason = "stopped while it ran; what it measured is in its run directory"
        else:
            result.status, result.reason = "failed", exit_reason(code, stderr)

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
        return sweep_columns([axis.key for axis in self.axes])

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
            "swept": {axis.key: list(axis.values) for axis in self.axes},
            "points": len(self.results),
            "answer": choose([result.figures for result in self.results if result.figures is not None]),
            "rows": self._rows(),
        }
        write_sweep_tables(self.directory.path, document, self._rows(), self._columns())
        return document
