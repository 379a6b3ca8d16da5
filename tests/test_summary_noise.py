"""Noise is judged by the interquartile range over the median per image (utils.record.statistics `spread`), as
torch.utils.benchmark judges it, so one outlier no longer flags a steady step (utils.writers.summary)."""
import pytest

from utils.record.statistics import describe
from utils.writers.summary import NOISE_WARNING, noisy_steps_warning


def test_spread_is_the_interquartile_range_over_the_median():
    # 1..9: quartiles 3 and 7 (numpy's linear interpolation), median 5
    assert describe([float(v) for v in range(1, 10)])["spread"] == pytest.approx((7 - 3) / 5)
    assert describe([0.0, 0.0, 0.0])["spread"] is None


def _row(step: str, values: list[float]) -> dict:
    stats = describe(values)
    return {"step": step, "count": stats["count"], "share_of_pipeline": 0.5, "cv_per_image": stats["cv"],
            "spread_per_image": stats["spread"]}


def test_one_outlier_does_not_flag_a_steady_step_and_a_spread_one_is_flagged():
    steady = _row("forward", [10.0] * 9 + [60.0])  # std/mean 1.5, IQR/median 0
    scattered = _row("load", [5.0, 8.0, 11.0, 14.0, 17.0, 20.0])
    assert steady["cv_per_image"] > NOISE_WARNING and steady["spread_per_image"] == 0.0
    warning = noisy_steps_warning([steady, scattered])
    assert warning.startswith("noisy timings, interquartile range over median per image above 10%: load ")
    assert "forward" not in warning
    assert noisy_steps_warning([steady]) is None
