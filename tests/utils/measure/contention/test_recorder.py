import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.helpers import section_shape_errors
from utils.measure.contention.section import ContentionSection
from utils.measure.contention.recorder import (ContentionRecorder, contention_verdict, free_cores, process_ticks,
                                       read_cpu_mhz, threads_supported, with_thread_advice)
from utils.measure.memory.recorder import ProcessTree

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
STAT_HEAD = "cpu  9999 9 9999 9999 99 9 9 9 0 0\n"  # the all-CPUs line: never read, the per-CPU lines are


def cpu_line(cpu, user, nice, system, idle, iowait, irq, softirq, steal=None):
    fields = [user, nice, system, idle, iowait, irq, softirq] + ([steal, 0, 0] if steal is not None else [])
    return f"cpu{cpu} " + " ".join(map(str, fields)) + "\n"


def process_stat(pid, utime, stime, cutime, cstime, name="python (x) y"):
    # The name holds spaces and a parenthesis, as a comm may.
    return (f"{pid} ({name}) S 1 {pid} {pid} 0 -1 4194304 100 0 0 0 "
            f"{utime} {stime} {cutime} {cstime} 20 0 3 0 100 1000 100\n")


class FakeMachine:
    """A /proc tree the test rewrites between the recorder's readings, and a clock it sets by hand."""

    def __init__(self, root: Path, pid: int = 100):
        self.root, self.pid, self.now = root, pid, 0.0
        (root / "loadavg").write_text("0.50 0.40 0.30 1/100 999\n")

    def set(self, cpu_lines, own, children=(), load="0.50 0.40 0.30"):
        """own: (utime, stime, cutime, cstime) of the process; children: (pid, the same four) each."""
        (self.root / "stat").write_text(STAT_HEAD + "".join(cpu_lines) + "intr 0\nctxt 0\n")
        (self.root / "loadavg").write_text(f"{load} 1/100 999\n")
        task = self.root / str(self.pid) / "task" / str(self.pid)
        task.mkdir(parents=True, exist_ok=True)
        (task / "children").write_text("".join(f"{pid} " for pid, _ in children))
        (self.root / str(self.pid) / "stat").write_text(process_stat(self.pid, *own))
        for pid, times in children:
            (self.root / str(pid) / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
            (self.root / str(pid) / "task" / str(pid) / "children").write_text("")
            (self.root / str(pid) / "stat").write_text(process_stat(pid, *times, name="pt_data_worker"))

    def recorder(self, cpus=(0, 1)) -> ContentionRecorder:
        return ContentionRecorder(proc_root=self.root, sys_root=self.root / "sys", pid=self.pid, cpus=cpus,
                                  clock=lambda: self.now)


def test_shares_computed_by_hand(tmp_path):
    machine = FakeMachine(tmp_path)
    machine.set([cpu_line(0, 1000, 10, 200, 5000, 50, 5, 5, steal=40),
                 cpu_line(1, 2000, 0, 300, 4000, 20, 0, 10, steal=60)],
                own=(700, 100, 50, 10), children=[(200, (300, 20, 0, 0))])
    recorder = machine.recorder()
    with recorder:
        machine.now = 2.0
        # Busy ticks grow by 150 + 20 + 30 + 10 + 10 on cpu0 and 180 + 0 + 20 + 0 + 10 on cpu1: 430 ticks.
        # Ours grow by 120 + 30 (process) + 0 + 0 (cutime, cstime) + 80 + 10 (the worker): 240 ticks.
        # Steal grows by 10 + 30 = 40 ticks; idle and iowait grow but are never busy.
        machine.set([cpu_line(0, 1150, 30, 230, 5050, 60, 15, 15, steal=50),
                     cpu_line(1, 2180, 0, 320, 4100, 20, 0, 20, steal=90)],
                    own=(820, 130, 50, 10), children=[(200, (380, 30, 0, 0))], load="1.75 0.80 0.40")
    summary = recorder.summary()
    assert summary["status"] == "measured" and summary["cpus_counted"] == [0, 1]
    assert not section_shape_errors(summary, ContentionSection)
    assert summary["wall_s"] == 2.0
    assert summary["machine_busy_cpu_s"] == pytest.approx(430 * TICK_S)
    assert summary["own_cpu_s"] == pytest.approx(240 * TICK_S)
    assert summary["other_processes_cpu_s"] == pytest.approx(190 * TICK_S)
    assert summary["other_processes_cpu_share"] == pytest.approx(190 * TICK_S / (2 * 2.0))
    assert summary["steal_share"] == pytest.approx(40 * TICK_S / (2 * 2.0))
    assert summary["load_average_start"] == (0.5, 0.4, 0.3) and summary["load_average_end"] == (1.75, 0.8, 0.4)


def test_only_our_cpus_count(tmp_path):
    machine = FakeMachine(tmp_path)
    machine.set([cpu_line(0, 0, 0, 0, 0, 0, 0, 0), cpu_line(1, 0, 0, 0, 0, 0, 0, 0)], own=(0, 0, 0, 0))
    recorder = machine.recorder(cpus=[1])
    with recorder:
        machine.now = 1.0
        # cpu0 is fully busy with someone else's work, but we cannot run there.
        machine.set([cpu_line(0, 100, 0, 0, 0, 0, 0, 0), cpu_line(1, 30, 0, 0, 70, 0, 0, 0)], own=(20, 0, 0, 0))
    summary = recorder.summary()
    assert summary["cpus_counted"] == [1]
    assert summary["other_processes_cpu_share"] == pytest.approx(10 * TICK_S / 1.0)


def test_a_worker_reaped_during_the_window_stays_ours(tmp_path):
    machine = FakeMachine(tmp_path)
    machine.set([cpu_line(0, 0, 0, 0, 0, 0, 0, 0)], own=(10, 0, 0, 0), children=[(200, (40, 10, 0, 0))])
    recorder = machine.recorder(cpus=[0])
    with recorder:
        machine.now = 1.0
        # The worker ran 30 more ticks, exited and was reaped: its whole 80 ticks moved into our cutime.
        machine.set([cpu_line(0, 100, 0, 0, 0, 0, 0, 0)], own=(20, 0, 70, 10))
    summary = recorder.summary()
    assert summary["own_cpu_s"] == pytest.approx((10 + 30) * TICK_S)
    assert summary["other_processes_cpu_s"] == pytest.approx(60 * TICK_S)


def test_windows_add_up_and_tick_noise_is_not_negative(tmp_path):
    machine = FakeMachine(tmp_path)
    machine.set([cpu_line(0, 100, 0, 0, 0, 0, 0, 0)], own=(100, 0, 0, 0))
    recorder = machine.recorder(cpus=[0])
    with recorder:
        machine.now = 1.0
        machine.set([cpu_line(0, 150, 0, 0, 50, 0, 0, 0)], own=(150, 0, 0, 0), load="0.9 0.4 0.3")
    machine.now = 5.0  # between windows (a layer-timing pass, say): not counted
    machine.set([cpu_line(0, 500, 0, 0, 50, 0, 0, 0)], own=(200, 0, 0, 0))
    with recorder:
        machine.now = 6.0
        # Our ticks ran one ahead of the CPU's: a measurement artefact, not negative neighbours.
        machine.set([cpu_line(0, 560, 0, 0, 90, 0, 0, 0)], own=(261, 0, 0, 0), load="1.2 0.5 0.3")
    summary = recorder.summary()
    assert summary["windows"] == 2 and summary["wall_s"] == 2.0
    assert summary["machine_busy_cpu_s"] == pytest.approx(110 * TICK_S)
    assert summary["own_cpu_s"] == pytest.approx(111 * TICK_S)
    assert summary["other_processes_cpu_s"] == 0.0
    assert summary["steal_share"] is None  # this /proc/stat has no steal column
    assert summary["load_average_start"][0] == 0.5 and summary["load_average_end"][0] == 1.2


def test_without_proc_stat_it_says_why(tmp_path):
    recorder = ContentionRecorder(proc_root=tmp_path)
    with recorder:
        pass
    summary = recorder.summary()
    assert summary["status"] == "unavailable" and "needs Linux" in summary["reason"]
    assert contention_verdict(summary) is None


def test_never_entered_is_unavailable(tmp_path):
    machine = FakeMachine(tmp_path)
    machine.set([cpu_line(0, 0, 0, 0, 0, 0, 0, 0)], own=(0, 0, 0, 0))
    assert machine.recorder().summary() == {"status": "unavailable", "reason": "no window was measured"}


def test_frequency_from_sysfs_then_cpuinfo(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2000.000\n\nprocessor\t: 1\n"
                                      "cpu MHz\t\t: 2400.500\n\nprocessor\t: 2\ncpu MHz\t\t: 800.0\n")
    mhz, source = read_cpu_mhz(tmp_path, tmp_path / "sys", [0, 1])
    assert mhz == [2000.0, 2400.5] and source.startswith("/proc/cpuinfo")
    for cpu, khz in ((0, 3100000), (1, 2900000)):
        folder = tmp_path / "sys" / f"devices/system/cpu/cpu{cpu}/cpufreq"
        folder.mkdir(parents=True)
        (folder / "scaling_cur_freq").write_text(f"{khz}\n")
    assert read_cpu_mhz(tmp_path, tmp_path / "sys", [0, 1]) == ([3100.0, 2900.0], "scaling_cur_freq (sysfs cpufreq)")
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")  # e.g. ARM
    assert read_cpu_mhz(tmp_path, tmp_path / "nosys", [0]) == (
        [], "no cpufreq in sysfs and no 'cpu MHz' in /proc/cpuinfo")


def measured(other=0.25, steal=0.0, start=(0.5, 0.4, 0.3), end=(2.1, 0.9, 0.4), cpus=(0, 1)):
    return {"status": "measured", "other_processes_cpu_share": other, "steal_share": steal,
            "load_average_start": start, "load_average_end": end, "cpus_counted": list(cpus)}


def test_verdict():
    assert contention_verdict(measured(other=0.05)) is None
    assert contention_verdict(measured(other=0.10)) is None
    # 2 cores, 25% taken: 1.5 cores free, which support 1 thread.
    assert contention_verdict(measured(other=0.25)) == (
        "contended: other processes used 25% of the cores during the timed passes (load average 0.50 -> 2.10); "
        "timings are slower than on a quiet machine; the free cores (about 1.5 of 2) support 1 compute thread(s)")
    assert contention_verdict(measured(other=0.25), threshold=0.3) is None
    assert contention_verdict(measured(other=0.04, steal=0.08)) == (
        "contended: other processes used 4% of the cores during the timed passes (load average 0.50 -> 2.10); "
        "the hypervisor gave 8% of them to other guests (steal); timings are slower than on a quiet machine; "
        "the free cores (about 1.8 of 2) support 1 compute thread(s)")
    assert "load average unknown" in contention_verdict(measured(start=None, steal=None))


@pytest.mark.parametrize("cores, other, steal, free, supported", [
    (2, 0.5, 0.0, 1.0, 1),    # one of two cores busy elsewhere (the 12.5x case): one thread
    (2, 0.04, 0.0, 1.92, 2),  # tick noise: both cores free
    (2, 0.04, 0.08, 1.76, 1),  # steal counts as taken
    (4, 0.3, None, 2.8, 3),
    (2, 0.99, 0.0, 0.02, 1),  # never fewer than one
])
def test_threads_the_free_cores_support(cores, other, steal, free, supported):
    assert free_cores(cores, other, steal) == pytest.approx(free)
    assert threads_supported(cores, other, steal) == supported


def test_the_advice_names_a_thread_count_when_the_run_used_more():
    line = contention_verdict(measured(other=0.5), threads=2)
    assert line.endswith("support 1 compute thread(s): this run used 2, and threads beyond the free cores wait "
                         "for busy ones, so --set runtime.threads=1 is likely faster while the load lasts")
    assert "likely faster" not in contention_verdict(measured(other=0.5), threads=1)
    assert with_thread_advice(measured(other=0.5))["threads_supported"] == 1


# Real processes. A busy loop bounded by its own CPU time, so a loaded machine only makes it slower.
BURN = "import sys, time\nend = time.process_time() + float(sys.argv[1])\nwhile time.process_time() < end: pass\n"
# Started by a short-lived parent, the burner is adopted by init: not our descendant, a true neighbour. Its
# output goes nowhere, or reading the parent's output would wait for the burner to end; the tests kill the burners
# at once, and 30 s of CPU bounds them should a test die first.
ORPHAN = ("import subprocess, sys\n"
          "burner = subprocess.Popen([sys.executable, '-c', sys.argv[1], '30'], start_new_session=True,\n"
          "                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
          "print(burner.pid, flush=True)\n")


def wait_for_cpu(pid, at_least_s, before_ticks=0, timeout_s=30.0):
    """The CPU seconds `pid` has run since `before_ticks`, once it has run `at_least_s` of them (or at the
    timeout): on a loaded machine a burner gets a small share of a core, so a fixed wait proves nothing."""
    deadline = time.monotonic() + timeout_s
    while True:
        ran_s = (process_ticks(Path("/proc"), pid) - before_ticks) * TICK_S
        if ran_s >= at_least_s or time.monotonic() > deadline:
            return ran_s
        time.sleep(0.05)


def test_a_process_that_is_not_ours_counts_as_other():
    intermediate = subprocess.run([sys.executable, "-c", ORPHAN, BURN], capture_output=True, text=True, check=True)
    orphan = int(intermediate.stdout)
    try:
        assert orphan not in own_descendants()
        time.sleep(0.2)  # the interpreter starts
        recorder = ContentionRecorder()
        before = process_ticks(Path("/proc"), orphan)
        with recorder:
            orphan_s = wait_for_cpu(orphan, 0.5, before)
    finally:
        os.kill(orphan, 9)
    summary = recorder.summary()
    assert orphan_s > 0.3  # it really ran (at least part of a core, on a shared machine)
    # Everything else the machine ran is other too: the orphan is a lower bound, minus a few ticks of skew.
    assert summary["other_processes_cpu_s"] >= orphan_s - 5 * TICK_S
    assert summary["other_processes_cpu_share"] >= (orphan_s - 5 * TICK_S) / (len(recorder.cpus) * summary["wall_s"])
    assert summary["own_cpu_s"] < 0.2


def own_descendants():
    return ProcessTree().descendants()


@pytest.mark.slow
def test_our_children_count_as_ours_reaped_or_alive():
    recorder, alive = ContentionRecorder(), None
    try:
        with recorder:
            subprocess.run([sys.executable, "-c", BURN, "0.4"], check=True)
            alive = subprocess.Popen([sys.executable, "-c", BURN, "30"])
            wait_for_cpu(alive.pid, 0.3)
            assert alive.pid in own_descendants()
            alive_s = process_ticks(Path("/proc"), alive.pid) * TICK_S
    finally:
        if alive is not None:
            alive.kill()
            alive.wait()
    summary = recorder.summary()
    assert alive_s > 0.2
    # The reaped child's 0.4 s of CPU (through cutime) and the live one's ticks so far are this run's own time.
    assert summary["own_cpu_s"] >= 0.4 + alive_s - 5 * TICK_S
