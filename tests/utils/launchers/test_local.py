"""The local launcher (utils/launchers/local.py): one process per point, one after another, each told its output
folder; a stop passed on to the running point, and later points not started. A stand-in script takes benchmark.py's
place, so that no run is needed to see what the launcher does."""
import os
import signal
import textwrap
import threading
from pathlib import Path

import pytest

from utils.launchers import local
from utils.launchers.base import PointJob, Stops

POINT = textwrap.dedent("""\
    import os, signal, sys, time
    arguments = sys.argv[1:]
    print(" ".join(arguments))
    if "wait" in arguments:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        open(os.environ["STARTED"], "w").close()
        time.sleep(60)
    sys.exit(int(arguments[0]))
""")


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    script = tmp_path / "benchmark.py"
    script.write_text(POINT)
    monkeypatch.setattr(local, "BENCHMARK_SCRIPT", script)
    monkeypatch.setenv("STARTED", str(tmp_path / "started"))
    return tmp_path


def jobs(folder: Path, *codes: str) -> list[PointJob]:
    return [PointJob(f"p{index}", (code,), folder / "sweep" / f"p{index}") for index, code in enumerate(codes)]


def test_points_run_one_after_another_and_each_outcome_is_its_own(stand_in):
    events = []
    started = lambda job, where: events.append(("started", job.name, where))  # noqa: E731
    finished = lambda job, outcome: events.append(("finished", job.name, outcome.returncode,  # noqa: E731
                                                   outcome.stdout.split()))
    local.LocalLauncher().run(jobs(stand_in, "0", "2"), Stops(), started, finished)
    output_dir = f'run.output_dir="{stand_in / "sweep"}"'
    assert events == [("started", "p0", ""), ("finished", "p0", 0, ["0", "--set", output_dir]),
                      ("started", "p1", ""), ("finished", "p1", 2, ["2", "--set", output_dir])]


def test_a_stop_reaches_the_running_point_and_no_later_point_starts(stand_in):
    stops, events = Stops(), []
    waiting = [PointJob("p0", ("0", "wait"), stand_in / "sweep" / "p0"), *jobs(stand_in, "0")]

    def stop_once_it_runs():
        while not Path(os.environ["STARTED"]).exists():
            threading.Event().wait(0.05)
        stops._handle(signal.SIGTERM, None)  # what the handler does when SIGTERM arrives

    stopper = threading.Thread(target=stop_once_it_runs)
    stopper.start()
    local.LocalLauncher().run(waiting, stops, lambda job, where: events.append(job.name),
                              lambda job, outcome: events.append((job.name, outcome.returncode)))
    stopper.join()
    assert events == ["p0", ("p0", 143)] and stops.forward is None
