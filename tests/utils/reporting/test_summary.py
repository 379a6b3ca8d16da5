"""Noise is judged by the interquartile range over the median (utils.record.statistics), as torch.utils.benchmark
judges it, and on what it judges it on: the same batch timed again (`repeat_spread`), not the spread over images,
which also holds how much the images differ (utils.reporting.summary)."""
import pytest

from utils.record.statistics import describe, repeat_spread
from utils.reporting.summary import NOISE_WARNING, noisy_steps_warning


def test_spread_is_the_interquartile_range_over_the_median():
    # 1..9: quartiles 3 and 7 (numpy's linear interpolation), median 5
    assert describe([float(v) for v in range(1, 10)])["spread"] == pytest.approx((7 - 3) / 5)
    assert describe([0.0, 0.0, 0.0])["spread"] is None


def test_repeat_spread_is_the_median_over_batches_of_each_batchs_spread_across_passes():
    # Batch spreads: [10, 12] -> 2 / 22; [20, 20, 20] -> 0; [5, 6, 7, 100] -> quartiles 5.75 and 30.25 over 6.5.
    # A batch timed once has no spread of its own and is left out.
    spreads = sorted([2 / 22, 0.0, (30.25 - 5.75) / 6.5])
    assert repeat_spread([[10.0, 12.0], [20.0] * 3, [5.0, 6.0, 7.0, 100.0], [40.0]]) == pytest.approx(spreads[1])
    assert repeat_spread([[40.0], [50.0]]) is None and repeat_spread([]) is None


def _row(step: str, per_image: list[float], repeated: list[list[float]] | None = None, share: float = 0.5) -> dict:
    stats = describe(per_image)
    return {"step": step, "count": stats["count"], "share_of_pipeline": share, "cv_per_image": stats["cv"],
            "spread_per_image": stats["spread"], "repeat_spread": repeat_spread(repeated or [])}


def test_images_that_differ_are_no_noise_when_each_batch_repeats_its_time():
    # Three images, each loading in its own time, the same in both passes: a wide spread over images, none over
    # passes. The pipeline repeats too, so the run is judged on the repeats alone.
    load = _row("load", [5.0, 20.0, 40.0] * 2, [[5.0, 5.0], [20.0, 20.0], [40.0, 40.0]])
    pipeline = _row("pipeline", [50.0, 65.0, 85.0] * 2, [[50.0, 50.5], [65.0, 65.0], [85.0, 84.0]], share=1.0)
    assert load["spread_per_image"] > NOISE_WARNING and load["repeat_spread"] == 0.0
    assert noisy_steps_warning([pipeline, load]) is None


def test_a_batch_that_changes_from_pass_to_pass_is_noise_and_is_named():
    forward = _row("forward", [10.0, 14.0, 10.0, 14.0], [[10.0, 14.0], [10.0, 14.0]])  # 4 / 24 per batch
    pipeline = _row("pipeline", [12.0, 16.0, 12.0, 16.0], [[12.0, 16.0], [12.0, 16.0]], share=1.0)
    steady = _row("preprocess", [1.0] * 9 + [6.0], [[1.0, 1.0]] * 5)  # one outlier: std/mean 1.5, IQR/median 0
    warning = noisy_steps_warning([pipeline, forward, steady])
    assert warning.startswith("noisy timings, the same batch differing from pass to pass by more than 10%")
    assert "forward 17%" in warning and "pipeline 14%" in warning and "preprocess" not in warning
    assert steady["cv_per_image"] > NOISE_WARNING


def test_a_step_drawn_once_by_design_is_not_judged_beside_repeated_ones():
    pipeline = _row("pipeline", [10.0, 10.0], [[10.0, 10.0]], share=1.0)
    annotate = _row("annotate_save", [5.0, 15.0, 30.0], None, share=0.2)  # drawn in the first pass only
    assert noisy_steps_warning([pipeline, annotate]) is None


def test_a_run_that_never_timed_a_batch_twice_says_it_cannot_tell_noise_from_the_images():
    pipeline = _row("pipeline", [10.0, 20.0, 30.0], None, share=1.0)
    warning = noisy_steps_warning([pipeline])
    assert warning.startswith("timings spread over images by more than 10% (interquartile range over median per "
                              "image): pipeline 50%")
    assert "benchmark.repeats" in warning and "cannot be told" in warning
    assert noisy_steps_warning([_row("pipeline", [10.0, 10.0, 10.0], None, share=1.0)]) is None


def _record(step_order, steps=()):
    from utils.record.run_record import RunIdentity, RunRecord

    identity = RunIdentity(run_id="r", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                           weights="random (seed 0)", random_weights=True, seed=0, img_size=160, batch_size=1,
                           runtime={"backend": "torch", "precision": "fp32", "threads": 1}, step_order=step_order)
    record = RunRecord(identity)
    record.steps = list(steps)
    return record


def test_the_latency_definition_names_the_fetch_the_timed_batches_ran():
    from utils.record.steps import PassKind, StepRecord, step_order
    from utils.reporting.summary import summary_document

    video = step_order(("preprocess", "forward"), ("decode_frames",))
    assert video == ("pipeline", "decode_frames", "preprocess", "forward", "annotate_save")
    definition = summary_document(_record(video))["pipeline_latency"]["definition"]
    assert definition.startswith("per batch: decode_frames (reading and decoding the batch's video frames, in the "
                                 "loop) + the pipeline's stages (preprocess + forward);")
    # LoadGen on frames: its warm-up decodes, its timed queries load from memory; the definition is of the timed.
    loadgen = step_order(("forward",), ("decode_frames", "load"))
    timed = [StepRecord(name, parent, PassKind.TIMED, 0, 0, 1, 0, 1_000_000)
             for name, parent in (("load", "pipeline"), ("forward", "pipeline"), ("pipeline", None))]
    definition = summary_document(_record(loadgen, timed))["pipeline_latency"]["definition"]
    assert definition.startswith("per batch: load (wait for the data loader; under LoadGen, for samples it holds "
                                 "decoded in memory) + the pipeline's stages (forward);")
