"""The ratio of medians with its bootstrap interval, on hand-built samples."""
import pytest

from utils.record.bootstrap import median_ratio_interval

SAMPLES = [10.0, 11.0, 9.5, 10.5, 12.0, 10.2, 9.8, 11.5]


def test_identical_samples_give_one_and_no_significance():
    interval = median_ratio_interval(SAMPLES, SAMPLES)
    assert interval.ratio == 1.0
    assert interval.low < 1.0 < interval.high
    assert not interval.significant


def test_twice_as_slow_is_two_and_significant():
    interval = median_ratio_interval(SAMPLES, [2 * value for value in SAMPLES])
    assert interval.ratio == pytest.approx(2.0)
    assert 1.0 < interval.low <= 2.0 <= interval.high
    assert interval.significant


def test_faster_is_below_one_and_significant():
    interval = median_ratio_interval(SAMPLES, [value / 2 for value in SAMPLES])
    assert interval.ratio == pytest.approx(0.5) and interval.high < 1.0 and interval.significant


def test_constant_samples_give_an_exact_interval():
    # Every resample of [1, 1, 1] has median 1 and of [3, 3, 3] median 3: the interval is the point 3.
    interval = median_ratio_interval([1.0, 1.0, 1.0], [3.0, 3.0, 3.0])
    assert (interval.ratio, interval.low, interval.high) == (3.0, 3.0, 3.0)


def test_seeded_so_the_same_inputs_give_the_same_interval():
    first = median_ratio_interval(SAMPLES, SAMPLES[::-1], seed=7)
    assert first == median_ratio_interval(SAMPLES, SAMPLES[::-1], seed=7)
    assert first != median_ratio_interval(SAMPLES, [v * 1.01 for v in SAMPLES], seed=7)


def test_too_few_samples_give_no_interval():
    assert median_ratio_interval([1.0, 2.0], SAMPLES) is None
    assert median_ratio_interval(SAMPLES, []) is None
    assert median_ratio_interval([0.0, 0.0, 0.0], SAMPLES) is None
