import multiprocessing
import os
import random
import time

import numpy as np
import pytest

from utils.recorders.memory import NO_STEP, MemorySampler, peak_increase_per_step


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
    sampler = MemorySampler(interval_s=60.0, read_rss_mib=lambda: next(readings))
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
    assert [r["step"] for r in sampler.step_rows()] == ["nms", "postprocess"]
    summary = sampler.summary()
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
    assert summary["samples"] == len(rows) and summary["source"] == "memory_profiler"
    assert summary["peak_rss_mib"] >= max(r["rss_mib"] for r in rows)
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
        child.start()
        assert ready.wait(10)
        time.sleep(0.15)
        done.set()
        child.join(10)
    rows = sampler.rows()
    summary = sampler.summary()
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
