"""Fixtures shared by the test modules. Plain constants are in tests/support/paths.py (ROOT, SAMPLES, SHAPES, CONFIGS)
and plain helpers in tests/support/helpers.py (quick_args, run_benchmark, ...): import those; pytest hands these fixtures
to any test that names them.

The quick loop leaves out the slow tests (whole runs of the command line, subprocesses, exports):
`.venv/bin/python -m pytest -m "not slow"`. `make test` runs everything.

No process outlives the test that started it: every process the suite starts carries a mark in its environment
(inherited by its own children, even once they are orphaned), and a test that leaves one running fails, naming
it, after the processes are killed."""
import os
import signal
import subprocess
import time
import uuid

# Two workers' compute threads share 2 cores: torch's OpenMP threads spinning after each parallel region then take
# the cores from the other worker's (a whole run took 3 to 20 times as long beside another). Read when libgomp
# loads, so before anything imports torch; processes the suite starts inherit it. No test times anything.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest

from tests.support.processes import GRACE_S, SESSION_MARK, marked, pids


@pytest.fixture(scope="session", autouse=True)
def processes_of_this_session():
    """Marks the environment every process of the suite inherits; yields the mark as bytes."""
    token = uuid.uuid4().hex
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SESSION_MARK, token)
        yield f"{SESSION_MARK}={token}".encode()


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(request, processes_of_this_session):
    """Fails a test that leaves a process of the suite running (after killing it): a run left going slows every
    test after it and can outlast the suite."""
    before = pids()
    yield
    deadline = time.monotonic() + GRACE_S
    left = marked(pids() - before, processes_of_this_session, before)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = marked(left, processes_of_this_session, before)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    if left:
        listed = "; ".join(f"{pid}: {command}" for pid, command in left.items())
        pytest.fail(f"{request.node.nodeid} left {len(left)} process(es) running (now killed): {listed}",
                    pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_as_python_has_it():
    """A shell starts a background job with SIGINT ignored (`make test &`, nohup): the stop-signal tests would
    then test that inheritance, not detbench. Python's own Ctrl-C handler for the session, as a terminal gives."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        yield
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        yield


@pytest.fixture(autouse=True)
def thread_counts_kept():
    """torch's and OpenCV's thread counts are process-wide: a runtime a test prepares and never closes would
    leave every later test in this process on its share."""
    import cv2
    import torch

    torch_threads, opencv_threads = torch.get_num_threads(), cv2.getNumThreads()
    yield
    if torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)
    if cv2.getNumThreads() != opencv_threads:
        cv2.setNumThreads(opencv_threads)


@pytest.fixture(scope="session", autouse=True)
def cache_of_this_session(tmp_path_factory):
    """Exports, int8 models and their accuracy-aware choices are cached in a folder of this session's, never the
    user's ~/.cache/detbench: a suite on a fresh clone and one on a used machine then do the same work. Runs in
    subprocesses inherit it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(scope="module")
def network():
    """yolov7-tiny on seeded random weights (seed 0), loaded once per test module. A module that needs another
    network (trained weights, another seed) defines its own `network` fixture, which takes precedence."""
    from pipelines.yolo.family import load_network

    return load_network("yolov7-tiny", None, seed=0)



def terminal_like() -> None:
    """In a child before it runs: Ctrl-C and a hang-up as at a terminal. A suite started as a background job
    (`make test &`) has SIGINT ignored, and one started under `nohup` SIGHUP; a child inherits the ignore, even in
    a session of its own, and the command then takes no such stop."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture
def spawn():
    """`spawn(command, **popen_options)`: a subprocess.Popen in a session of its own with Ctrl-C live, its whole
    process group killed in teardown if the test left it going."""
    started = []

    def start(command, **options):
        started.append(subprocess.Popen(command, start_new_session=True, preexec_fn=terminal_like, **options))
        return started[-1]

    yield start
    for process in started:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


@pytest.fixture
def cli(tmp_path):
    """Starts benchmark.py in processes of their own (tests.support.helpers.Cli): `cli(*overrides, holds=..., taps=...,
    nohup=...)`. Whatever a test left going is killed with its process group in teardown."""
    from tests.support.helpers import Cli

    runs = []

    def start(*overrides: str, **options):
        runs.append(Cli(tmp_path, *overrides, **options))
        return runs[-1]

    yield start
    for run in runs:
        run.kill()


def pytest_collection_modifyitems(items):
    """The whole runs of the command line first, each file's tests in their order: under `make test` a test file is
    one worker's at a time, in this order, and the longest files handed out last left one worker finishing alone."""
    items.sort(key=lambda item: "whole_runs" not in item.path.parts)
