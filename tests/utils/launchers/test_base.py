"""The launcher seam (utils/launchers/base.py): a point's command with its output folder as a YAML string, and the
stop signals of a sweep: the first passed on once, every one counted, the handlers put back after."""
import json
import os
import signal
from pathlib import Path

from utils.launchers.base import Launcher, PointJob, Stops


def test_a_points_command_is_benchmark_py_with_its_arguments_and_output_folder():
    job = PointJob("p1", ("--config", "c.yaml", "--set", "run.id=p1"), Path("/sweep/p1"))
    command = job.command("/venv/python", "/repo/benchmark.py", "/sweep: 'odd'")
    assert command[:6] == ["/venv/python", "/repo/benchmark.py", "--config", "c.yaml", "--set", "run.id=p1"]
    assert command[6:] == ["--set", f"run.output_dir={json.dumps('/sweep: ' + chr(39) + 'odd' + chr(39))}"]
    assert job.node is None


def test_the_first_stop_is_passed_on_once_and_every_one_is_counted():
    forwarded = []
    before = signal.getsignal(signal.SIGTERM)
    with Stops().handled() as stops:
        stops.forward = forwarded.append
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    assert forwarded == [signal.SIGTERM] and stops.received == signal.SIGTERM and stops.count == 2
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_launcher_by_default_reaches_nothing_refuses_nothing_and_describes_its_name():
    class Plain(Launcher):
        name = "plain"

        def run(self, jobs, stops, started, finished):
            pass

    plain = Plain()
    plain.open()
    plain.check([])
    plain.close()
    assert plain.describe() == {"name": "plain"} and plain.columns == () and not plain.places_points
