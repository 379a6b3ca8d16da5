"""Step timings as plain data (utils/record/steps.py): a record's milliseconds, the rows of steps_timer.csv in seconds
on the run's clock without the run bracket, and the harness's steps around the pipeline's own in running order."""
import pytest

from utils.record.steps import (ANNOTATE_STEP, LOAD_STEP, PIPELINE_STEP, RUN_STEP, STEP_TIMER_COLUMNS, PassKind,
                                StepRecord, step_order, step_rows)

ORIGIN_NS = 10_000_000_000


def record(step, parent, kind=PassKind.TIMED, start_ms=0.0, ms=1.0, **rest) -> StepRecord:
    start = ORIGIN_NS + int(start_ms * 1e6)
    return StepRecord(step, parent, kind, 0, 0, 2, start, start + int(ms * 1e6), **rest)


def test_a_record_knows_its_milliseconds_and_whether_it_warmed_up():
    assert record("forward", "pipeline", ms=12.5).ms == 12.5
    assert record("forward", None, PassKind.WARMUP).warmup and not record("forward", None).warmup
    assert str(PassKind.LAYERS) == "layers"


def test_rows_are_in_seconds_from_the_origin_and_the_run_bracket_is_left_out():
    rows = step_rows([record(RUN_STEP, None, ms=100), record(LOAD_STEP, PIPELINE_STEP, start_ms=1500, ms=2),
                      record("nms", "postprocess", start_ms=2000, ms=0.5, cold_shape=True)], ORIGIN_NS)
    assert [row["step"] for row in rows] == [LOAD_STEP, "nms"] and all(set(row) == set(STEP_TIMER_COLUMNS)
                                                                       for row in rows)
    assert rows[0]["start_s"] == pytest.approx(1.5) and rows[0]["end_s"] == pytest.approx(1.502)
    assert (rows[0]["parent"], rows[0]["pass_kind"], rows[0]["warmup"], rows[0]["ms"]) == ("pipeline", "timed",
                                                                                        False, 2.0)
    assert rows[1]["cold_shape"] is True and record("x", None).cold_shape is False
    assert step_rows([record("forward", None)], ORIGIN_NS)[0]["parent"] == ""


def test_the_harness_brackets_the_pipelines_steps():
    assert step_order(("preprocess", "forward")) == (PIPELINE_STEP, LOAD_STEP, "preprocess", "forward", ANNOTATE_STEP)
