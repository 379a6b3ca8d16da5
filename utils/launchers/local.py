"""The `local` launcher: one benchmark.py process per point on this machine, one after another (threads, OpenMP
settings and compile caches are process-wide, so points must not share one, nor the CPUs at the same time).
A stop signal is passed on to the running point, which writes what it measured; later points are not started.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from utils.launchers.base import Finished, Launcher, PointJob, PointOutcome, Started, Stops

BENCHMARK_SCRIPT = Path(__file__).resolve().parents[2] / "benchmark.py"


class LocalLauncher(Launcher):
    name = "local"

    def run(self, jobs: list[PointJob], stops: Stops, started: Started, finished: Finished) -> None:
        for job in jobs:
            if stops.received:
                return
            started(job, "")
            finished(job, self._run(job, stops))

    def _run(self, job: PointJob, stops: Stops) -> PointOutcome:
        command = job.command(sys.executable, str(BENCHMARK_SCRIPT), str(job.run_dir.parent))
        # Its own session: a Ctrl-C at the terminal reaches the point once, through Stops, not twice.
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
        stops.forward = lambda number: child.poll() is None and child.send_signal(number)
        if stops.received:  # arrived between the check and the start: pass it on now
            child.send_signal(stops.received)
        try:
            stdout, stderr = child.communicate()
        finally:
            stops.forward = None
        return PointOutcome(child.returncode, stdout, stderr)
