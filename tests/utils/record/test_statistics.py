import math
import random
import statistics as stdlib_statistics

import pytest

from utils.record.statistics import SUMMARY_FIELDS, describe, outlier_mask, pass_spread


def test_hand_computed_case():
    values = [1.0, 2.0, 3.0, 4.0, 100.0]
    summary = describe(values)
    # mean 110 / 5 = 22; squared deviations 441 + 400 + 361 + 324 + 6084 = 7610; / (5 - 1) = 1902.5
    # linear percentiles sit at position (n - 1) * q: p25 -> 1 -> 2, p50 -> 2 -> 3, p75 -> 3 -> 4,
    # p90 -> 3.6 -> 4 + 0.6 * 96 = 61.6, p99 -> 3.96 -> 4 + 0.96 * 96 = 96.16
    # fences 2 - 1.5 * 2 = -1 and 4 + 1.5 * 2 = 7: only 100 is an outlier
    assert summary["count"] == 5
    assert summary["total"] == 110.0
    assert summary["mean"] == 22.0
    assert summary["std"] == pytest.approx(math.sqrt(1902.5))
    assert (summary["min"], summary["max"]) == (1.0, 100.0)
    assert summary["p50"] == 3.0
    assert summary["p90"] == pytest.approx(61.6)
    assert summary["p99"] == pytest.approx(96.16)
    assert summary["iqr"] == 2.0
    assert summary["cv"] == pytest.approx(math.sqrt(1902.5) / 22)
    assert summary["outliers"] == 1
    assert outlier_mask(values) == [False, False, False, False, True]


def _reference_summary(values):
    cuts = stdlib_statistics.quantiles(values, n=100, method="inclusive")  # cut i is the (i+1)th percentile
    q1, _, q3 = stdlib_statistics.quantiles(values, n=4, method="inclusive")
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    mask = [v < low or v > high for v in values]
    mean = stdlib_statistics.fmean(values)
    std = stdlib_statistics.stdev(values)
    return {
        "count": len(values), "mean": mean, "std": std, "min": min(values),
        "p50": stdlib_statistics.median(values), "p90": cuts[89], "p99": cuts[98], "max": max(values),
        "total": math.fsum(values), "iqr": q3 - q1, "cv": std / mean, "outliers": sum(mask),
    }, mask


@pytest.mark.parametrize("seed", range(10))
def test_matches_statistics_module(seed):
    rng = random.Random(seed)
    values = [rng.lognormvariate(3, 0.4) for _ in range(rng.randint(2, 300))]
    values += [rng.uniform(200, 400) for _ in range(seed % 3)]  # a few slow iterations
    expected, expected_mask = _reference_summary(values)
    summary = describe(values)
    assert set(summary) == set(SUMMARY_FIELDS)
    for field, value in expected.items():
        assert summary[field] == pytest.approx(value, rel=1e-9, abs=1e-12), field
    assert outlier_mask(values) == expected_mask


def test_outliers_are_counted_not_dropped():
    values = [10.0] * 20 + [10.5, 9.5, 500.0]
    summary = describe(values)
    assert summary["count"] == len(values)
    assert summary["max"] == 500.0
    assert summary["total"] == pytest.approx(sum(values))
    assert summary["outliers"] == 3  # IQR is 0, so everything off 10.0 is outside the fences


def test_single_value():
    summary = describe([7.5])
    assert (summary["count"], summary["std"], summary["cv"], summary["iqr"]) == (1, 0.0, 0.0, 0.0)
    assert summary["p50"] == summary["p99"] == summary["min"] == 7.5
    assert summary["outliers"] == 0


def test_zero_mean_has_no_cv():
    assert describe([0.0, 0.0])["cv"] is None


def test_empty_input():
    summary = describe([])
    assert summary["count"] == 0
    assert all(summary[field] is None for field in SUMMARY_FIELDS if field != "count")
    assert outlier_mask([]) == []


def test_returns_plain_python_numbers():
    summary = describe([1.0, 2.0, 3.0])
    assert type(summary["count"]) is int and type(summary["outliers"]) is int
    assert all(type(summary[f]) is float for f in SUMMARY_FIELDS if f not in ("count", "outliers"))


def test_median_interval_ranks_match_the_binomial_tables():
    from utils.record.statistics import median_confidence_interval
    assert median_confidence_interval([1, 2, 3, 4, 5]) is None  # 2 / 2**5 > 0.05: no 95% interval from 5
    assert median_confidence_interval([6, 5, 4, 3, 2, 1]) == (1, 6)
    assert median_confidence_interval(list(range(1, 11))) == (2, 9)
    assert median_confidence_interval(list(range(1, 101))) == (40, 61)
    assert median_confidence_interval(list(range(3000)))[0] > 1400  # large n: no overflow


def test_median_interval_covers_the_true_median_at_least_as_promised():
    import numpy as np

    from utils.record.statistics import median_ci_half_width, median_confidence_interval
    rng = np.random.default_rng(1)
    true_median = np.log(2) / 1.0  # exponential with rate 1: skewed, like latencies
    covered = 0
    for _ in range(2000):
        low, high = median_confidence_interval(rng.exponential(1.0, 25).tolist())
        covered += low <= true_median <= high
    assert covered / 2000 >= 0.95
    assert median_ci_half_width([10.0] * 10) == 0.0
    assert 0 < median_ci_half_width(list(range(90, 111))) < 0.1


def test_a_goal_is_met_or_missed_only_when_the_whole_interval_says_so():
    from utils.record.statistics import MET, MISSED, NOT_RESOLVED, judge_against, median_confidence_interval
    # at most 1.02 (a tax)
    assert judge_against(1.01, (0.99, 1.02), 1.02, higher_is_better=False) == MET  # the limit itself meets it
    assert judge_against(1.05, (1.021, 1.08), 1.02, higher_is_better=False) == MISSED
    assert judge_against(1.01, (0.95, 1.07), 1.02, higher_is_better=False) == NOT_RESOLVED
    # at least 0.95 (a speed against a peer's)
    assert judge_against(0.97, (0.95, 0.99), 0.95, higher_is_better=True) == MET
    assert judge_against(0.91, (0.87, 0.949), 0.95, higher_is_better=True) == MISSED
    assert judge_against(0.94, (0.90, 0.97), 0.95, higher_is_better=True) == NOT_RESOLVED
    # no interval: the median alone
    assert judge_against(0.95, None, 0.95, higher_is_better=True) == MET
    assert judge_against(1.021, None, 1.02, higher_is_better=False) == MISSED
    # five rounds at 90%: the lowest and the highest round
    assert median_confidence_interval([0.93, 0.97, 0.91, 0.99, 0.95], 0.90) == (0.91, 0.99)


def test_pass_spread_is_the_slowest_pass_over_the_fastest():
    assert pass_spread([10.0, 12.0, 11.0]) == pytest.approx(1.2)
    assert pass_spread([10.0]) is None and pass_spread([]) is None
