import statistics

import pytest

from utils.measure.steps.statistics import overhead_ratio, summarize_steps
from utils.record.steps import PassKind, StepRecord

TIMED, WARMUP, LAYERS = PassKind.TIMED, PassKind.WARMUP, PassKind.LAYERS


def row(step, ms, images, kind=TIMED, index=0, batch=0, parent=None):
    return StepRecord(step, parent, kind, index, batch, images, 0, int(ms * 1e6))


ROWS = [
    row("pipeline", 999.0, 4, kind=WARMUP),
    row("forward", 900.0, 4, kind=WARMUP, parent="pipeline"),
    row("pipeline", 110.0, 4, batch=0), row("forward", 100.0, 4, batch=0, parent="pipeline"),
    row("pipeline", 56.0, 2, batch=1), row("forward", 50.0, 2, batch=1, parent="pipeline"),
    row("pipeline", 108.0, 4, index=1, batch=0), row("forward", 100.0, 4, index=1, batch=0, parent="pipeline"),
    row("pipeline", 54.0, 2, index=1, batch=1), row("forward", 50.0, 2, index=1, batch=1, parent="pipeline"),
    row("forward", 500.0, 4, kind=LAYERS, batch=0, parent="pipeline"),
    # a batch whose every file was skipped: it only waited for the loader
    row("pipeline", 0.3, 0, batch=2), row("load", 0.3, 0, batch=2, parent="pipeline"),
]
ORDER = ("pipeline", "load", "forward")


def test_timed_passes_only_with_shares_and_per_image_figures():
    summary = {s["step"]: s for s in summarize_steps(ROWS, ORDER)}
    forward, pipeline = summary["forward"], summary["pipeline"]
    assert forward["count"] == 4 and forward["images"] == 12
    assert forward["total_ms"] == pytest.approx(300.0)
    assert forward["share_of_pipeline"] == pytest.approx(300.0 / 328.0)
    assert pipeline["share_of_pipeline"] == pytest.approx(1.0)
    assert forward["ms_per_image"] == pytest.approx(25.0)
    assert forward["images_per_s"] == pytest.approx(40.0)
    assert forward["parent"] == "pipeline" and pipeline["parent"] == ""
    # Per batch the 4-image and 2-image batches look noisy; per image they are identical.
    assert forward["cv"] == pytest.approx(statistics.stdev([100, 50, 100, 50]) / 75.0)
    assert forward["cv_per_image"] == pytest.approx(0.0)
    assert forward["p50_ms_per_image"] == pytest.approx(25.0)
    # per image 27.5, 28, 27, 27: p90 lies 0.7 of the way from 27.5 to 28
    assert pipeline["p90_ms_per_image"] == pytest.approx(27.85)
    assert [s["step"] for s in summarize_steps(ROWS, ORDER)] == ["pipeline", "forward"]
    # the empty batch is in no statistic: count 4, not 5, and the mean batch holds 3 images
    assert pipeline["count"] == 4 and pipeline["mean_images_per_batch"] == pytest.approx(3.0)
    # The same batch across the two passes: pipeline batch 0 27.5 and 27 per image, batch 1 28 and 27. With two
    # values the IQR over median is (b - a) / (a + b): 0.5 / 54.5 and 1 / 55, their median the mean of the two.
    assert pipeline["repeat_spread"] == pytest.approx((0.5 / 54.5 + 1 / 55) / 2)
    assert forward["repeat_spread"] == 0.0


def test_a_step_timed_in_one_pass_has_no_repeat_spread():
    once = [row("pipeline", 10.0, 1, batch=0), row("pipeline", 30.0, 1, batch=1)]
    summary = summarize_steps(once)[0]
    assert summary["repeat_spread"] is None and summary["spread_per_image"] == pytest.approx(10 / 20)


def test_overhead_ratio_matches_batches_and_uses_medians():
    rows = [row("forward", 100.0, 4, batch=0), row("forward", 120.0, 4, index=1, batch=0),
            row("forward", 50.0, 2, batch=1), row("forward", 50.0, 2, index=1, batch=1),
            row("forward", 121.0, 4, kind=LAYERS, batch=0), row("forward", 55.0, 2, kind=LAYERS, batch=1)]
    # batch 0: 30.25 / median(25, 30) = 1.1; batch 1: 27.5 / 25 = 1.1
    assert overhead_ratio(rows, LAYERS) == pytest.approx(1.1)
    assert overhead_ratio(rows, PassKind.PROFILER) is None
