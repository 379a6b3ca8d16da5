"""py-spy sampling this process for real: samples placed on the step clock, and every way it can be missing
(not installed, ptrace refused, killed mid-run) ending in a result that says so, never an exception."""
import os
import shutil
import signal
import subprocess
import time

import pytest

from utils.measure.below_layer.native_time import clock_offset_us, offset_bounds_us, step_shares, thread_segments
from utils.record.steps import PassKind
from utils.measure.below_layer.sampler import (MARK_FUNCTION, PERMISSION_HINT, SAMPLER_NICE, PySpySampler, _why_it_failed,
                                     find_py_spy)
from utils.measure.steps.step_timer import StepTimer

PY_SPY = find_py_spy()
needs_py_spy = pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed")


def python_loop(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(range(200))
    return total


def sleeping(seconds):
    time.sleep(seconds)


@pytest.mark.slow
@needs_py_spy
def test_samples_land_on_the_steps_that_ran_them(tmp_path):
    sampler = PySpySampler(50, tmp_path)
    assert sampler.start() is None
    if os.geteuid() == 0:  # every py-spy thread runs at the raised priority, so its holds on the run are short
        tasks = os.listdir(f"/proc/{sampler.process.pid}/task")
        assert sampler.priority == SAMPLER_NICE
        assert all(os.getpriority(os.PRIO_PROCESS, int(task)) == SAMPLER_NICE for task in tasks)
    timer = StepTimer()
    timer.set_batch(PassKind.TIMED, 0, 0)
    with timer.step("python_work"):
        python_loop(1.0)
    with timer.step("waiting"):
        sleeping(1.0)
    result = sampler.stop()
    assert result.status == "measured", result.reason
    assert result.samples and result.samples > 10
    main = thread_segments(result.events)[result.main_thread]
    offset = clock_offset_us(main, result.marks_ns, MARK_FUNCTION, result.rate)
    assert offset is not None
    bounds = offset_bounds_us(main, result.marks_ns, MARK_FUNCTION)
    tolerance = min(max(bounds) - min(bounds), 1e6 / result.rate)  # as the harness does
    rows = {row["step"]: row for row in step_shares(timer.records, main, offset, ["python_work", "waiting"],
                                                    tolerance)}
    # by time alone, each step gets the stacks of what it ran
    assert rows["python_work"]["python_share"] > 0.7
    assert rows["waiting"]["waiting_share"] > 0.7


def test_missing_py_spy_is_a_result(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    sampler = PySpySampler(50, tmp_path, search_path=str(empty))
    result = sampler.start()
    assert result.status == "unavailable" and "pip install py-spy" in result.reason
    assert sampler.stop() is result


@needs_py_spy
def test_a_killed_sampler_is_reported(tmp_path):
    sampler = PySpySampler(50, tmp_path)
    assert sampler.start() is None
    os.kill(sampler.process.pid, signal.SIGKILL)  # the real py-spy process dies mid-run
    python_loop(0.2)
    result = sampler.stop()
    assert result.status == "died"
    assert "died during the timed passes" in result.reason and "SIGKILL" in result.reason


@needs_py_spy
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to run py-spy as an unprivileged user")
def test_refused_ptrace_is_said_in_words(tmp_path):
    # py-spy as user nobody may not ptrace a root process: its own message is turned into the hint
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PY_SPY, "record",
                          "--pid", str(os.getpid()), "--duration", "1", "--output", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert _why_it_failed(run.stdout, run.stderr, run.returncode) == PERMISSION_HINT
