"""The suite's own check that no process outlives its test (conftest.py, tests/support/processes.py)."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.processes import SESSION_MARK, marked, pids

SLEEPER = [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))"]


def test_a_process_of_the_suite_left_running_is_found_and_no_other(processes_of_this_session):
    before = pids()
    ours = subprocess.Popen(SLEEPER + ["30"])
    stranger = subprocess.Popen(SLEEPER + ["30"], env={k: v for k, v in os.environ.items() if k != SESSION_MARK})
    try:
        found = marked(pids() - before, processes_of_this_session, before)
        assert list(found) == [ours.pid] and "time.sleep" in found[ours.pid]
    finally:
        for process in (ours, stranger):
            process.kill()
            process.wait()
    assert marked(pids() - before, processes_of_this_session, before) == {}


def test_the_workers_of_a_process_started_before_the_test_are_its_own(processes_of_this_session, spawn):
    """A cluster a module's fixture started spawns workers during later tests: they are not the test's."""
    cluster = spawn(SLEEPER[:2] + ["import subprocess, sys, time; time.sleep(0.5); "
                                   "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
                                   "time.sleep(30)"])
    before = pids()
    deadline = time.monotonic() + 20
    workers = []
    while time.monotonic() < deadline and not workers:
        time.sleep(0.05)
        workers = [pid for pid in pids() - before if parent_of(pid) == cluster.pid]
    assert workers, "the worker never started"
    assert marked(pids() - before, processes_of_this_session, before) == {}


def parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError):
        return None


def test_an_orphan_left_by_a_process_that_ended_is_found(processes_of_this_session):
    """The parent exits at once; its child, taken over by init (or the container's reaper), lives on."""
    before = pids()
    parent = subprocess.run(SLEEPER[:2] + ["import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', "
                                           "'import time; time.sleep(30)'], stdout=subprocess.DEVNULL, "
                                           "stderr=subprocess.DEVNULL).pid)"],
                            capture_output=True, text=True, timeout=60, check=True)
    orphan = int(parent.stdout)
    try:
        assert list(marked(pids() - before, processes_of_this_session, before)) == [orphan]
    finally:
        os.kill(orphan, signal.SIGKILL)
