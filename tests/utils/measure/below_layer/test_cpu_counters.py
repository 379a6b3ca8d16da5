"""The CPU's counters: the perf_event_open binding against the real kernel, the /proc readings, the listener
around pipeline steps, and the per-pass sums against hand-computed cases."""
import mmap
import os
import threading
import time

import pytest

from utils.measure.below_layer.counter_rows import PROCESS_ROW, counter_rows, counters_summary
from utils.record.steps import PIPELINE_STEP, RUN_STEP, PassKind
from utils.measure.below_layer import perf_events
from utils.measure.below_layer.cpu_counters import CpuCounters, _read_whole, parse_task
from utils.measure.steps.step_timer import StepTimer
from tests.support.busy import busy


def test_parse_task_reads_proc_stat_and_status():
    # comm with a space and a parenthesis: fields start after the last ')'
    fields = ["S"] + ["0"] * 6 + ["11", "0", "3", "0", "25", "7"] + ["0"] * 30
    stat = f"123 (my (thread) x) {' '.join(fields)}\n".encode()
    status = b"Name:\tx\nvoluntary_ctxt_switches:\t40\nnonvoluntary_ctxt_switches:\t2\n"
    assert parse_task(stat, status) == {"voluntary_switches": 40.0, "involuntary_switches": 2.0,
                                        "proc_minor_faults": 11.0, "proc_major_faults": 3.0, "cpu_user_ticks": 25.0,
                                        "cpu_system_ticks": 7.0}


def test_a_file_longer_than_the_first_read_is_read_whole(tmp_path):
    """status ends with the context switches: a cut-off read would lose exactly the fields wanted."""
    path = tmp_path / "status"
    path.write_bytes(b"Cpus_allowed_list:\t" + b"0-1," * 5000 + b"\nvoluntary_ctxt_switches:\t9\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_whole(fd, size=1024) == path.read_bytes()
        assert _read_whole(fd, size=1024) == path.read_bytes()  # again from the start, not from where it stopped
    finally:
        os.close(fd)


def test_a_thread_that_ends_is_dropped_and_its_files_closed():
    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    worker.start()
    counters = CpuCounters()
    timer = StepTimer([counters])
    before = open_fds()
    with counters:
        timer.set_batch(PassKind.TIMED, 0, 0)
        with timer.step(PIPELINE_STEP):
            busy(0.001)
        done.set()
        worker.join()
        # join returns once Python is done with the thread; the kernel ends it a moment later
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/self/task/{worker.native_id}") and time.monotonic() < deadline:
            time.sleep(0.001)
        held = open_fds()
        timer.set_batch(PassKind.TIMED, 0, 1)
        with timer.step(PIPELINE_STEP):
            busy(0.001)
        assert open_fds() == held - 2 - len(counters.counting)  # its stat, status and counters
    assert worker.native_id in counters.batches[0].threads and worker.native_id not in counters.batches[1].threads
    assert os.getpid() in counters.batches[1].threads
    assert open_fds() == before


def test_listener_counts_each_pipeline_step():
    counters = CpuCounters()
    timer = StepTimer([counters])
    cpu_before = time.thread_time_ns()
    with counters:
        for batch in range(2):
            timer.set_batch(PassKind.TIMED, 0, batch)
            with timer.step(PIPELINE_STEP):
                with timer.step("forward"):  # other steps are not read
                    busy(0.03)
                    time.sleep(0.01)
    assert len(counters.batches) == 2
    main = counters.batches[0].threads[next(t for t, n in counters.names.items() if t == os.getpid())]
    assert main["task_clock_ns"] >= 30e6
    assert counters.batches[0].end_ns > counters.batches[0].start_ns
    both = sum(batch.threads[os.getpid()]["task_clock_ns"] for batch in counters.batches)
    assert both <= time.thread_time_ns() - cpu_before
    assert main["voluntary_switches"] >= 1
    assert "cycles" in counters.refused or "cycles" in counters.counting
    rows = counter_rows(counters.batches, timer.records, counters.names, 10.0)
    total = rows[-1]
    assert total["thread"] == PROCESS_ROW and total["batches"] == 2
    assert total["cpu_ms"] == pytest.approx(sum(row["cpu_ms"] for row in rows[:-1]))
    assert total["cpu_per_wall"] == pytest.approx(total["cpu_ms"] / total["wall_ms"])


def test_page_faults_come_from_proc_and_no_fault_counter_is_opened():
    """An open perf fault counter makes every fault of its thread dearer (benchmarks/overhead/fault_counter_tax.py), and the
    kernel counts faults in /proc anyway: the rows' faults are /proc's."""
    counters = CpuCounters()
    timer = StepTimer([counters])
    pages = 2000
    with counters:
        timer.set_batch(PassKind.TIMED, 0, 0)
        with timer.step(PIPELINE_STEP):
            region = mmap.mmap(-1, pages * 4096)
            for page in range(pages):  # a write to each fresh page faults once
                region[page * 4096] = 1
            region.close()
    assert not {"minor_faults", "major_faults"} & set(counters.counting)
    main = counters.batches[0].threads[os.getpid()]
    assert "minor_faults" not in main and main["proc_minor_faults"] >= pages
    # Rows come in tid order, and a thread started before this one can hold a lower tid once pids wrap.
    row = next(row for row in counter_rows(counters.batches, timer.records, counters.names, 10.0)
               if row["tid"] == os.getpid())
    assert row["minor_faults"] == main["proc_minor_faults"]


def test_a_thread_born_inside_the_bracket_is_counted_from_its_birth():
    """A LoadGen test starts threads of its own inside the `run` bracket: their /proc totals all fall inside it;
    perf counters, which count only from when they are opened, are left out for that bracket."""
    def sleeper():
        for _ in range(5):
            time.sleep(0.002)  # each sleep a voluntary switch

    counters = CpuCounters(around=RUN_STEP)
    timer = StepTimer([counters])
    with counters:
        timer.set_batch(PassKind.TIMED, 0, 0)
        with timer.step(RUN_STEP):
            done = threading.Event()
            worker = threading.Thread(target=lambda: (sleeper(), done.wait()))
            worker.start()
            time.sleep(0.05)
            born = worker.native_id
        done.set()
        worker.join()
    counted = counters.batches[0].threads[born]
    assert counted["voluntary_switches"] >= 5
    assert not set(counted) & set(perf_events.COUNTERS)
    assert born in counters.names and os.getpid() in counters.batches[0].threads


def test_under_loadgen_the_reads_bracket_the_whole_test():
    """Streams' batches overlap under LoadGen: one read at each end of the `run` bracket, none per batch (each
    per-batch read cost its stream about 3 ms), and the pass's wall is the bracket's."""
    counters = CpuCounters(around=RUN_STEP)
    timer = StepTimer([counters])
    with counters:
        timer.set_batch(PassKind.TIMED, 0, 0)
        with timer.step(RUN_STEP):
            for batch in range(3):
                timer.set_batch(PassKind.TIMED, 0, batch)
                with timer.step(PIPELINE_STEP):
                    busy(0.01)
            time.sleep(0.02)  # after the last batch: still inside the test
    assert len(counters.batches) == 1
    rows = counter_rows(counters.batches, timer.records, counters.names, 10.0, RUN_STEP)
    run = next(r for r in timer.records if r.step == RUN_STEP)
    pipelines = sum(r.ms for r in timer.records if r.step == PIPELINE_STEP)
    total = rows[-1]
    assert total["batches"] == 1 and total["wall_ms"] == pytest.approx(run.ms)
    assert total["wall_ms"] >= pipelines + 20
    assert total["cpu_ms"] >= 30
    summary = counters_summary(rows, counters.counting, counters.refused, False, RUN_STEP)
    assert "LoadGen test" in summary["source"]
    # Read per pipeline step, the same records give three batches' worth and the summed steps' wall.
    assert "every pipeline step" in counters_summary(rows, [], {}, False)["source"]
