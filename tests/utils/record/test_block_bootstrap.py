"""The block bootstrap on hand cases: whole blocks are drawn, a constant statistic has a point interval, too few
blocks give none, and a ratio of two sides holds its hand-computed value."""
import numpy as np
import pytest

from utils.record.bootstrap import MIN_BLOCKS, block_interval, block_ratio_interval


def mean_of(draw):
    return float(np.concatenate(draw).mean())


def test_a_constant_statistic_has_a_point_interval():
    blocks = [np.full(5, 7.0) for _ in range(10)]
    assert block_interval(blocks, mean_of) == (7.0, 7.0)


def test_blocks_are_drawn_whole():
    """Block k holds k and k + 0.5: a draw of six whole blocks has a mean whose six-fold, less 1.5, is a whole
    number; frames drawn one by one would break that."""
    blocks = [np.array([float(k), k + 0.5]) for k in range(6)]
    low, high = block_interval(blocks, mean_of, resamples=500)
    assert 0.0 <= low < 2.75 < high <= 5.5
    for end in (low, high):
        assert (end * 6 - 1.5) == pytest.approx(round(end * 6 - 1.5))


def test_too_few_blocks_give_no_interval():
    assert block_interval([np.ones(3)] * (MIN_BLOCKS - 1), mean_of) is None
    assert block_ratio_interval([np.ones(3)] * MIN_BLOCKS, [np.ones(3)] * (MIN_BLOCKS - 1), mean_of) is None


def test_a_ratio_of_two_sides():
    base = [np.full(4, 10.0) for _ in range(8)]
    new = [np.full(4, 15.0) for _ in range(8)]
    found = block_ratio_interval(base, new, mean_of)
    assert found.ratio == pytest.approx(1.5) and (found.low, found.high) == pytest.approx((1.5, 1.5))
    assert found.significant
    assert block_ratio_interval([np.zeros(2)] * 8, new, mean_of) is None  # base's statistic is not positive


def test_the_draws_are_seeded():
    blocks = [np.random.default_rng(index).normal(10, 2, 5) for index in range(12)]
    assert block_interval(blocks, mean_of, seed=4) == block_interval(blocks, mean_of, seed=4)
