import multiprocessing
import os
import random
import time

import numpy as np
import pytest

from tests.support.helpers import section_shape_errors
from tests.support.paths import ROOT
from utils.measure.memory.section import MemorySection
from utils.measure.memory.recorder import (MEMORY_COLUMNS, NO_STEP, MemorySampler, ProcessTree, PssUnavailable,
                                    peak_increase_per_step)


def brute_peak_increase(samples, intervals):
    result = {}
    for step, start, end in intervals:
        inside = [rss for t, rss in samples if start <= t <= end]
        if not inside:
            continue
        before = [rss for t, rss in samples if t <= start]
        start_rss = before[-1] if before else inside[0]
        increase = max([start_rss] + inside) - start_rss
        result[step] = max(result.get(step, 0.0), increase)
    return result


def test_peak_increase_hand_built_case():
    samples = [(0.0, 100.0), (1.0, 110.0), (2.0, 150.0), (3.0, 120.0), (4.0, 90.0), (5.0, 95.0), (6.0, 300.0)]
    intervals = [
        ("forward", 0.5, 3.5),   # starts at 100 (sample at t=0), peaks at 150 -> 50
        ("forward", 3.5, 5.5),   # starts at 120 (t=3), never above it -> 0, the first occurrence wins
        ("nms", 4.0, 4.5),       # a sample exactly at the start is the start: 90 -> 90
        ("load", 5.8, 5.9),      # no sample inside: skipped
        ("annotate_save", -1.0, 1.0),  # nothing before the start: the first inside (100) is the start -> 10
    ]
    assert peak_increase_per_step(samples, intervals) == {"forward": 50.0, "nms": 0.0, "annotate_save": 10.0}


def test_peak_increase_matches_brute_force():
    rng = random.Random(3)
    for _ in range(200):
        times = sorted(rng.uniform(0, 10) for _ in range(rng.randint(0, 30)))
        samples = [(t, rng.uniform(50, 500)) for t in times]
        intervals = []
        for _ in range(rng.randint(0, 8)):
            start = rng.uniform(-1, 10)
            intervals.append((rng.choice("abc"), start, start + rng.uniform(0, 3)))
        assert peak_increase_per_step(samples, intervals) == pytest.approx(brute_peak_increase(samples, intervals))


def test_samples_are_labelled_with_the_innermost_step():
    readings = iter([(90.0, 10.0), (100.0, 10.0), (110.0, 10.0), (120.0, 10.0), (130.0, 10.0)])
    pss_readings = iter([(50.0, 40.0), (70.0, 60.0), (65.0, 55.0), (60.0, 50.0), (55.0, 45.0)])
    sampler = MemorySampler(interval_s=60.0, read_rss_mib=lambda: next(readings),
                            read_pss_mib=lambda: next(pss_readings))
    with sampler:  # takes 100.0; the thread waits a minute, so only explicit samples follow
        assert sampler.mark_baseline() == 110.0
        sampler.step_started("postprocess")
        sampler.step_started("nms")
        sampler.mark_baseline()  # 120.0, inside nms
        sampler.step_ended("nms")
        sampler.mark_baseline()  # 130.0, back in postprocess
        sampler.step_ended("postprocess")
    rows = sampler.rows()
    assert [(r["rss_mib"], r["step"]) for r in rows] == [
        (100.0, NO_STEP), (110.0, NO_STEP), (120.0, "nms"), (130.0, "postprocess"), (140.0, NO_STEP)]
    assert [r["t_s"] for r in rows] == sorted(r["t_s"] for r in rows)
    assert all(r["rss_mib"] == r["self_rss_mib"] + r["children_rss_mib"] for r in rows)
    assert [r["pss_mib"] for r in rows] == [50.0, 70.0, 65.0, 60.0, 55.0]  # every explicit sample reads PSS
    assert [r["step"] for r in sampler.step_rows()] == ["nms", "postprocess"]
    summary = sampler.summary()
    assert not section_shape_errors(summary, MemorySection)
    assert summary["headline"] == "peak_pss_mib" and summary["pss_status"] == "measured"
    assert (summary["peak_pss_mib"], summary["peak_pss_anon_mib"], summary["pss_samples"]) == (70.0, 60.0, 5)
    assert summary["baseline_pss_mib"] == 60.0
    assert summary["peak_pss_mb"] == pytest.approx(70.0 * 2**20 / 1e6)
    assert summary["baseline_rss_mib"] == 130.0
    assert summary["peak_sampled_rss_mib"] == 140.0
    assert summary["peak_increase_mib_per_step"] == {"nms": 10.0, "postprocess": 20.0}  # both start from 110
    assert summary["peak_children_rss_mib"] == 10.0


def test_real_samples_are_plausible():
    machine_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    with MemorySampler(interval_s=0.01) as sampler:
        sampler.mark_baseline()
        time.sleep(0.15)
    rows = sampler.rows()
    assert len(rows) >= 5
    assert all(10 < r["rss_mib"] < machine_mb for r in rows)
    times = [r["t_s"] for r in rows]
    assert times == sorted(times) and times[0] >= 0
    summary = sampler.summary()
    assert summary["samples"] == len(rows) and summary["source"].startswith("/proc/<pid>/statm")
    assert summary["peak_rss_mib"] >= max(r["rss_mib"] for r in rows)
    # A process's PSS never exceeds its RSS; PSS is read at entry, at the baseline and at exit at least.
    assert summary["pss_status"] == "measured" and summary["pss_samples"] >= 3
    assert 5 < summary["peak_pss_mib"] <= summary["peak_rss_mib"]
    assert 0 < summary["peak_pss_anon_mib"] <= summary["peak_pss_mib"]
    assert summary["peak_rss_mib"] >= summary["ru_maxrss_mib"] > 10
    assert summary["baseline_rss_mib"] <= summary["peak_rss_mib"]


def test_a_big_allocation_shows_in_its_step():
    size_mb = 200
    with MemorySampler(interval_s=0.02) as sampler:
        sampler.step_started("run")
        sampler.step_started("nms")
        time.sleep(0.15)
        sampler.step_ended("nms")
        sampler.step_started("forward")
        block = np.ones(size_mb * 2**20 // 8)  # ones() writes every page, so all of it is resident
        time.sleep(0.2)
        del block
        sampler.step_ended("forward")
        sampler.step_ended("run")
    increases = sampler.summary()["peak_increase_mib_per_step"]
    assert 0.8 * size_mb <= increases["forward"] <= 1.3 * size_mb
    assert increases["nms"] < 0.2 * size_mb
    assert increases["run"] >= increases["forward"] - 5
    assert "forward" in {r["step"] for r in sampler.rows()}


def allocate_and_wait(size_mb: int, ready, done) -> None:
    block = np.ones(size_mb * 2**20 // 8)
    ready.set()
    done.wait(10)
    del block


def test_children_are_sampled_apart_from_the_process():
    size_mb = 100
    context = multiprocessing.get_context("fork")
    ready, done = context.Event(), context.Event()
    child = context.Process(target=allocate_and_wait, args=(size_mb, ready, done))
    with MemorySampler(interval_s=0.02) as sampler:
        before_pss = sampler.rows()[0]["pss_mib"]
        child.start()
        assert ready.wait(10)
        time.sleep(0.15)
        _, with_child_pss = sampler._sample(with_pss=True)
        done.set()
        child.join(10)
    rows = sampler.rows()
    summary = sampler.summary()
    assert with_child_pss >= before_pss + 0.8 * size_mb  # the child's own pages are in the tree's PSS
    assert summary["peak_pss_mib"] >= with_child_pss
    assert summary["peak_children_rss_mib"] >= size_mb
    assert max(r["self_rss_mib"] for r in rows) < rows[0]["self_rss_mib"] + 0.3 * size_mb
    assert summary["peak_sampled_rss_mib"] >= rows[0]["self_rss_mib"] + size_mb
    # The child has exited (other children of the test process, if any, may remain).
    assert rows[-1]["children_rss_mib"] <= summary["peak_children_rss_mib"] - 0.8 * size_mb


def test_without_children_the_children_column_is_empty():
    with MemorySampler(interval_s=0.01, include_children=False) as sampler:
        time.sleep(0.05)
    assert all(r["children_rss_mib"] is None and r["rss_mib"] == r["self_rss_mib"] for r in sampler.rows())
    assert sampler.summary()["peak_children_rss_mb"] is None


def wait_for(done) -> None:
    done.wait(10)


def test_pss_counts_pages_shared_with_a_forked_child_once():
    size_mb = 200
    context = multiprocessing.get_context("fork")
    done = context.Event()
    block = np.ones(size_mb * 2**20 // 8)
    with MemorySampler(interval_s=60.0) as sampler:
        _, alone_pss = sampler._sample(with_pss=True)
        child = context.Process(target=wait_for, args=(done,))
        child.start()
        try:
            time.sleep(0.2)
            sampler._sample(with_pss=True)
        finally:
            done.set()
            child.join(10)
    del block
    alone, forked = [r for r in sampler.rows() if r["pss_mib"] is not None][1:3]
    # The child maps the same block: RSS counts it twice, PSS splits it between the two processes.
    assert forked["rss_mib"] >= alone["rss_mib"] + 0.8 * size_mb
    assert abs(forked["pss_mib"] - alone["pss_mib"]) < 0.2 * size_mb
    assert forked["children_rss_mib"] >= 0.8 * size_mb


def test_unreadable_pss_falls_back_to_the_summed_rss_and_says_why():
    readings = iter([(50.0, 40.0)])

    def pss_then_failure():
        for reading in readings:
            return reading
        raise PssUnavailable("/proc/1/smaps_rollup is not readable by this user")

    sampler = MemorySampler(interval_s=60.0, read_rss_mib=lambda: (100.0, 20.0), read_pss_mib=pss_then_failure)
    with sampler:
        sampler.mark_baseline()
    summary = sampler.summary()
    assert summary["headline"] == "peak_rss_mib" and summary["peak_rss_mib"] >= 120.0
    assert summary["pss_status"] == "unavailable"
    assert summary["pss_reason"] == "/proc/1/smaps_rollup is not readable by this user"
    assert summary["peak_pss_mib"] is None and summary["peak_pss_mb"] is None
    # The reading taken before the failure stays in the table; no later sample invents one.
    assert [r["pss_mib"] for r in sampler.rows()] == [50.0, None, None]


def test_pss_reads_are_spaced_by_their_cost():
    def slow_pss():
        time.sleep(0.02)  # 20 ms at a 1% budget: the next read waits 2 s
        return 10.0, 5.0

    with MemorySampler(interval_s=0.01, read_rss_mib=lambda: (1.0, 0.0), read_pss_mib=slow_pss,
                       pss_min_interval_s=0.05) as slow:
        time.sleep(0.4)
    assert slow.summary()["pss_samples"] == 2  # entry and exit
    with MemorySampler(interval_s=0.01, read_rss_mib=lambda: (1.0, 0.0), read_pss_mib=lambda: (10.0, 5.0),
                       pss_min_interval_s=0.05) as fast:
        time.sleep(0.5)
    summary = fast.summary()
    assert 4 <= summary["pss_samples"] <= 2 + 0.5 / 0.05
    assert summary["pss_mean_spacing_s"] >= 0.04


@pytest.mark.slow
def test_a_pause_stops_the_wait_for_the_next_pss_read():
    """A read due during a pause would otherwise land in the first timed batch after it."""
    with MemorySampler(interval_s=0.01, read_rss_mib=lambda: (1.0, 0.0), read_pss_mib=lambda: (10.0, 5.0),
                       pss_min_interval_s=0.6) as sampler:
        sampler.pause()  # at once: about 0.6 s left until the next read
        time.sleep(1.0)
        sampler.resume()
        time.sleep(0.2)
        assert sampler.summary()["pss_samples"] == 1  # the read at entry only: 0.4 s still to wait
        time.sleep(0.8)
        assert sampler.summary()["pss_samples"] == 2


def fake_process(root, pid, rss_pages, rollup, children_by_task):
    folder = root / str(pid)
    for tid, children in children_by_task.items():
        (folder / "task" / str(tid)).mkdir(parents=True)
        (folder / "task" / str(tid) / "children").write_text(" ".join(map(str, children)) + (" " if children else ""))
    (folder / "statm").write_text(f"9999 {rss_pages} 100 10 0 500 0\n")
    if rollup is not None:
        (folder / "smaps_rollup").write_text(rollup)


def rollup_text(pss_kb, anon_kb=None):
    lines = ["55a3b7eae000-7ffc965f1000 ---p 00000000 00:00 0                          [rollup]",
             "Rss:                9999 kB", f"Pss:                {pss_kb} kB"]
    if anon_kb is not None:
        lines.append(f"Pss_Anon:           {anon_kb} kB")
    return "\n".join(lines + ["Swap:                  0 kB"]) + "\n"


def test_process_tree_sums_every_descendant(tmp_path):
    page_mib = os.sysconf("SC_PAGE_SIZE") / 2**20
    fake_process(tmp_path, 100, 1000, rollup_text(4096, 2048), {100: [200], 101: [300, 500]})
    fake_process(tmp_path, 200, 100, rollup_text(1024, 512), {200: [400]})
    fake_process(tmp_path, 300, 10, rollup_text(2048, 1024), {300: []})
    fake_process(tmp_path, 400, 1, rollup_text(1024, 1024), {400: []})  # a grandchild
    # 500 is listed but has exited since (no folder): the sums leave it out.
    tree = ProcessTree(pid=100, root=tmp_path)
    assert sorted(tree.descendants()) == [200, 300, 400, 500]
    own, children = tree.rss_mib()
    assert own == pytest.approx(1000 * page_mib) and children == pytest.approx(111 * page_mib)
    assert tree.pss_mib() == pytest.approx((8.0, 4.5))
    assert ProcessTree(pid=100, root=tmp_path, include_children=False).rss_mib() == (pytest.approx(own), None)
    assert ProcessTree(pid=100, root=tmp_path, include_children=False).pss_mib() == pytest.approx((4.0, 2.0))


def test_rss_samples_list_the_descendants_again_every_relist_interval_at_a_fork_of_the_main_thread_and_an_exit(
        tmp_path):
    page_mib = os.sysconf("SC_PAGE_SIZE") / 2**20
    now = [0.0]
    fake_process(tmp_path, 100, 1000, None, {100: [200], 101: []})
    fake_process(tmp_path, 200, 100, None, {200: []})
    tree = ProcessTree(pid=100, root=tmp_path, relist_s=1.0, clock=lambda: now[0])
    assert tree.rss_mib()[1] == pytest.approx(100 * page_mib)
    (tmp_path / "100" / "task" / "101" / "children").write_text("300 ")  # forked by another thread
    fake_process(tmp_path, 300, 10, None, {300: []})
    now[0] = 0.5
    assert tree.rss_mib()[1] == pytest.approx(100 * page_mib)  # listed 0.5 s ago: 300 not seen yet
    now[0] = 1.0
    assert tree.rss_mib()[1] == pytest.approx(110 * page_mib)
    (tmp_path / "100" / "task" / "100" / "children").write_text("200 400 ")  # the main thread forks: seen at once
    fake_process(tmp_path, 400, 1, None, {400: []})
    now[0] = 1.1
    assert tree.rss_mib()[1] == pytest.approx(111 * page_mib)
    (tmp_path / "200" / "statm").unlink()  # 200 exits: this sample leaves it out, the next one lists again
    (tmp_path / "100" / "task" / "101" / "children").write_text("300 500 ")
    fake_process(tmp_path, 500, 1000, None, {500: []})
    now[0] = 1.2
    assert tree.rss_mib()[1] == pytest.approx(11 * page_mib)
    assert tree.rss_mib()[1] == pytest.approx(1011 * page_mib)


def test_process_tree_without_pss_anon_gives_the_total_only(tmp_path):
    fake_process(tmp_path, 100, 1000, rollup_text(4096), {100: [200]})
    fake_process(tmp_path, 200, 100, rollup_text(1024, 512), {200: []})
    assert ProcessTree(pid=100, root=tmp_path).pss_mib() == (5.0, None)


@pytest.mark.parametrize("make, reason", [
    (lambda folder: None, "smaps_rollup needs Linux 4.14 or later"),
    (lambda folder: (folder / "smaps_rollup").mkdir(), "reading"),
    (lambda folder: (folder / "smaps_rollup").write_text("Rss: 10 kB\n"), "has no Pss line"),
])
def test_process_tree_says_why_pss_is_unavailable(tmp_path, make, reason):
    fake_process(tmp_path, 100, 1000, None, {100: []})
    make(tmp_path / "100")
    with pytest.raises(PssUnavailable, match=reason):
        ProcessTree(pid=100, root=tmp_path).pss_mib()


def test_the_sampler_no_longer_needs_memory_profiler():
    source = (ROOT / "utils" / "measure" / "memory" / "recorder.py").read_text()
    assert "memory_profiler" not in source


def test_columns_name_every_field_of_a_row():
    with MemorySampler(interval_s=60.0) as sampler:
        pass
    assert set(sampler.rows()[0]) == set(MEMORY_COLUMNS)


def test_without_proc_the_run_goes_on_and_the_summary_says_why():
    def no_proc():
        raise FileNotFoundError(2, "No such file or directory", "/proc/1/statm")

    sampler = MemorySampler(interval_s=0.01, read_rss_mib=no_proc)
    with sampler:
        assert sampler.mark_baseline() is None
        sampler.step_started("forward")
        sampler.step_ended("forward")
    summary = sampler.summary()
    assert summary["status"] == "unavailable" and "needs Linux" in summary["reason"]
    assert sampler.rows() == []
