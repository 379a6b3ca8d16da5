"""The perf_event_open binding (utils/measure/below_layer/perf_events.py) against the real kernel: software counters
count the calling thread and not another, a multiplexed count scaled by the time it ran, hardware counters count or
say why, errno meanings name the cause, an unknown machine refused in words."""
import errno
import os
import threading
import time

import pytest

from utils.measure.below_layer import perf_events
from tests.support.busy import busy


def test_software_counters_count_this_thread_and_not_another():
    """A counter opened for the calling thread counts its CPU time and its switches, and none of another thread's
    work. Judged against CPU time each thread spent, not wall time: a loaded machine stretches the one, not the
    other (the kernel's task clock and thread_time differ in accounting, so only a margin is held)."""
    other_done, other_cpu_ns = threading.Event(), []

    def other():
        began = time.thread_time_ns()
        busy(0.1)
        other_cpu_ns.append(time.thread_time_ns() - began)
        other_done.set()

    fd = perf_events.open_counter("task_clock_ns", 0)
    switches = perf_events.open_counter("context_switches", 0)
    try:
        for handle in (fd, switches):
            perf_events.enable(handle)
        cpu_before = time.thread_time_ns()
        busy(0.05)
        own = perf_events.read_counter(fd).value
        own_cpu_ns = time.thread_time_ns() - cpu_before
        worker = threading.Thread(target=other)
        worker.start()
        other_done.wait()  # blocked: this thread spends next to no CPU while the other burns 100 ms of its own
        worker.join()
        while_waiting = perf_events.read_counter(fd).value - own
        for _ in range(5):
            time.sleep(0.002)  # each sleep gives the CPU up: a voluntary switch
        clock, switched = perf_events.read_counter(fd), perf_events.read_counter(switches)
    finally:
        os.close(fd)
        os.close(switches)
    assert own >= own_cpu_ns / 2 and own >= 25e6  # this thread's 50 ms of CPU time
    assert while_waiting < other_cpu_ns[0] / 2  # not the other thread's 100 ms
    assert clock.running_ns > 0 and clock.scaled() >= clock.value
    assert switched.value >= 5


def test_a_multiplexed_count_is_scaled_by_the_time_it_ran():
    assert perf_events.scaled(100, 2_000, 1_000) == 200.0  # counted half the time it was enabled
    assert perf_events.scaled(7, 0, 0) == 7.0  # never scheduled: the raw count
    assert perf_events.Reading(100, 2_000, 1_000).scaled() == 200.0


def test_hardware_counters_count_or_say_why():
    reason = perf_events.probe("cycles")
    if reason is None:
        fd = perf_events.open_counter("instructions", 0)
        perf_events.enable(fd)
        busy(0.01)
        assert perf_events.read_counter(fd).value > 1000
        os.close(fd)
    else:  # this VM: no virtual PMU
        assert "not supported" in reason or "not permitted" in reason
        assert reason.endswith("]")


def test_errno_meanings_name_the_cause():
    assert "perf_event_paranoid" in perf_events.errno_meaning(errno.EACCES)
    assert "not supported" in perf_events.errno_meaning(errno.ENOENT) and "[ENOENT]" in perf_events.errno_meaning(
        errno.ENOENT)
    assert "CONFIG_PERF_EVENTS" in perf_events.errno_meaning(errno.ENOSYS)


def test_unknown_machine_is_refused_in_words(monkeypatch):
    monkeypatch.setattr(perf_events.platform, "machine", lambda: "vax")
    with pytest.raises(perf_events.PerfRefused, match="not known for vax"):
        perf_events.open_counter("task_clock_ns", 0)
