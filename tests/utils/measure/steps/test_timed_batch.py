"""utils.measure.steps.timed_batch: the one loop over batches every pass runs: fetch a batch, keep the images that
decoded, run the pipeline's stages, each step timed from outside by a StepTimer (or untimed without one).

Tested with hand-made stages, images and a StepTimer on a clock that ticks 1 ms per reading: which steps are
recorded with which parent, image count and batch place, that undecodable images are kept out of the work but
handed on, that a result leaves the loop only after its steps closed, and the batch arithmetic."""
import itertools

import numpy as np

from datasets.image_folder import LoadedImage
from pipelines.contract import Stage
from utils.measure.steps.timed_batch import (BatchPlace, PassPlace, batch_count, batch_loop, batch_sizes, run_stages,
                                             timed_batch, untimed)
from utils.record.steps import DECODE_FRAMES_STEP, LOAD_STEP, PIPELINE_STEP, PassKind
from utils.measure.steps.step_timer import StepTimer

STAGES = (Stage("preprocess", lambda v: v + ["pre"]), Stage("nms", lambda v: v + ["nms"], "postprocess"),
          Stage("scale_boxes", lambda v: v + ["scale"], "postprocess"))
GOOD, BROKEN = LoadedImage("a.jpg", np.zeros((2, 2, 3), np.uint8)), LoadedImage("b.jpg", None, "cannot decode")


def ticking_timer() -> StepTimer:
    ticks = itertools.count(0, 1_000_000)
    return StepTimer(clock=lambda: next(ticks))


def steps(timer):
    return [(r.step, r.parent) for r in timer.records]


def test_run_stages_keeps_a_group_open_across_its_children():
    timer = ticking_timer()
    assert run_stages(STAGES, timer, []) == ["pre", "nms", "scale"]
    assert steps(timer) == [("preprocess", None), ("nms", "postprocess"), ("scale_boxes", "postprocess"),
                            ("postprocess", None)]


def test_untimed_runs_the_same_stages_in_order():
    assert untimed(STAGES)(["start"]) == ["start", "pre", "nms", "scale"]


def test_untimed_batch_runs_only_the_decoded_images():
    result = timed_batch(lambda: [GOOD, BROKEN], len)
    assert result.samples == [GOOD, BROKEN] and result.valid == [GOOD]
    assert result.output == 1


def test_a_batch_with_nothing_decoded_runs_nothing():
    ran = []
    result = timed_batch(lambda: [BROKEN], ran.append, ticking_timer(), BatchPlace(PassKind.TIMED, 0, 0))
    assert ran == [] and result.output is None and result.valid == []


def test_timed_batch_records_load_inside_pipeline_at_its_place():
    timer = ticking_timer()
    result = timed_batch(lambda: [GOOD, BROKEN, GOOD], lambda images: run_stages(STAGES[:1], timer, []), timer,
                         BatchPlace(PassKind.WARMUP, 2, 5, cold_shape=True))
    assert result.output == ["pre"]
    assert steps(timer) == [(LOAD_STEP, PIPELINE_STEP), ("preprocess", PIPELINE_STEP), (PIPELINE_STEP, None)]
    assert {(r.pass_kind, r.pass_index, r.batch, r.images, r.cold_shape) for r in timer.records} == {
        (PassKind.WARMUP, 2, 5, 2, True)}
    assert [r.ms for r in timer.records] == [1.0, 1.0, 5.0]


def test_batch_loop_hands_on_each_result_after_its_steps_closed():
    timer = ticking_timer()
    seen = []
    for result in batch_loop(iter([[GOOD], [GOOD, GOOD]]), [3, 4], len, timer, PassPlace(cold_batches=frozenset({4}))):
        seen.append((result.output, len(timer.records)))
    assert seen == [(1, 2), (2, 4)]  # each batch's load and pipeline were recorded before it was handed on
    assert [(r.batch, r.cold_shape) for r in timer.records if r.step == PIPELINE_STEP] == [(3, False), (4, True)]


def test_a_pass_of_video_frames_times_its_fetch_as_their_decoding():
    timer = ticking_timer()
    place = PassPlace(PassKind.ACCURACY, 1, fetch_step=DECODE_FRAMES_STEP)
    list(batch_loop(iter([[GOOD]]), [0], len, timer, place))
    assert steps(timer) == [(DECODE_FRAMES_STEP, PIPELINE_STEP), (PIPELINE_STEP, None)]
    assert {(r.pass_kind, r.pass_index) for r in timer.records} == {(PassKind.ACCURACY, 1)}


def test_batch_count_and_sizes():
    assert (batch_count(7, 3), batch_count(6, 3), batch_count(0, 3)) == (3, 2, 0)
    assert batch_sizes(7, 3) == [3, 3, 1]
    assert batch_sizes(0, 3) == []
