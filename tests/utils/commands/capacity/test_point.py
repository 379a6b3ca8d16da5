"""A run of N cameras judged on hand-made windows: the p99 and drop share against hand-computed values, intervals
that hold a constant window to a point, the halves that tell a growing queue, and when a run is sure."""
import numpy as np
import pytest

from utils.commands.capacity.point import (MIN_BLOCKS, Bounds, WindowFrames, block_intervals, blocks, judge, p99,
                                           steadiness)

BOUNDS = Bounds(budget_ms=100.0, max_drop=0.05)


def window(latency, dropped=None, seconds=10.0, fps=15):
    arrival = np.arange(int(seconds * fps)) / fps
    latency = np.broadcast_to(np.asarray(latency, dtype=float), arrival.shape).copy()
    dropped = np.zeros(arrival.shape, dtype=bool) if dropped is None else np.asarray(dropped, dtype=bool)
    latency[dropped] = np.nan
    return WindowFrames(arrival, latency, dropped, 0.0, seconds)


def test_p99_interpolates_between_ranks_and_skips_frames_not_detected():
    assert p99(np.arange(1.0, 101.0)) == pytest.approx(99.01)
    assert p99(np.array([np.nan, 10.0, np.nan])) == 10.0
    assert p99(np.array([np.nan])) is None


def test_a_constant_window_within_the_bounds_is_served_and_sure():
    reading = judge(window(40.0), BOUNDS)
    assert reading.frames == 150 and reading.p99_ms == 40.0 and reading.drop_share == 0.0
    assert (reading.p99_interval.low, reading.p99_interval.high) == (40.0, 40.0)
    assert reading.steady and reading.served and reading.sure


def test_blocks_are_whole_seconds_of_arrival():
    frames = window(40.0, seconds=3.0, fps=2)
    assert [list(part) for part in blocks(frames)] == [[0, 1], [2, 3], [4, 5]]
    assert block_intervals(frames) == (None, None)  # fewer than MIN_BLOCKS seconds
    assert MIN_BLOCKS > 3


def test_a_latency_that_grows_over_the_window_is_not_steady_and_so_never_sure():
    frames = window(np.linspace(20.0, 90.0, 150))  # a queue filling up, still within the budget
    steady, said = steadiness(frames)
    assert not steady and "not steady" in said
    reading = judge(frames, BOUNDS)
    assert reading.served and not reading.sure


def test_drops_beyond_the_bound_are_not_served_surely():
    dropped = np.arange(150) % 2 == 0  # half of every second's frames
    reading = judge(window(30.0, dropped), BOUNDS)
    assert reading.drop_share == pytest.approx(0.5)
    assert reading.drop_interval.low > BOUNDS.max_drop
    assert not reading.served and reading.sure


def test_a_p99_on_the_budget_is_not_sure():
    latency = np.where(np.arange(150) % 15 == 0, 99.0, 50.0)  # one frame a second near the budget
    latency[0] = 105.0  # and one frame of one second above it: some draws hold it twice, some not at all
    reading = judge(window(latency), BOUNDS)
    assert reading.p99_interval.low <= BOUNDS.budget_ms < reading.p99_interval.high
    assert not reading.sure


def test_nothing_detected_is_not_served_surely():
    reading = judge(window(np.nan, np.ones(150, dtype=bool)), BOUNDS)
    assert reading.p99_ms is None and not reading.served and reading.sure


def test_the_intervals_are_seeded():
    latency = np.random.default_rng(3).gamma(4.0, 10.0, 150)
    assert block_intervals(window(latency), seed=1) == block_intervals(window(latency), seed=1)


def test_a_window_that_got_worse_is_surely_not_served_but_one_that_got_better_is_not_sure():
    dropped = np.zeros(150, dtype=bool)
    dropped[75::2] = True  # the second half drops half its frames: the first half alone met the bound
    worse = judge(window(30.0, dropped), BOUNDS)
    assert not worse.steady and not worse.served and worse.sure
    better = judge(window(30.0, dropped[::-1].copy()), BOUNDS)
    assert not better.steady and not better.served and not better.sure
