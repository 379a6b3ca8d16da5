import time

import pytest

from utils.record.steps import PassKind
from utils.measure.steps.step_timer import StepTimer


class SteppedClock:
    """A nanosecond clock that moves only when the test advances it, so no other process can change a time."""

    def __init__(self, start_ns=1_000_000):
        self.now_ns = start_ns

    def __call__(self):
        return self.now_ns

    def advance_ms(self, ms):
        self.now_ns += int(ms * 1e6)


class Recorder:
    def __init__(self):
        self.events = []

    def step_started(self, name):
        self.events.append(("start", name))

    def step_ended(self, name):
        self.events.append(("end", name))


def test_nested_steps_record_parent_context_and_time():
    listener = Recorder()
    clock = SteppedClock()
    timer = StepTimer([listener], clock=clock)
    clock.advance_ms(1.0)
    timer.set_batch(PassKind.TIMED, 1, 3)
    with timer.step("postprocess"):
        timer.set_images(2)
        with timer.step("nms"):
            clock.advance_ms(4.0)
        clock.advance_ms(2.0)
    rows = {r["step"]: r for r in timer.rows()}
    assert rows["nms"]["parent"] == "postprocess" and rows["postprocess"]["parent"] == ""
    assert rows["nms"]["batch"] == 3 and rows["nms"]["images"] == 2
    assert (rows["nms"]["pass_kind"], rows["nms"]["pass_index"], rows["nms"]["warmup"]) == ("timed", 1, False)
    assert rows["nms"]["ms"] == 4.0 and rows["postprocess"]["ms"] == 6.0
    # times are relative to the timer's creation: the steps started 1 ms after it
    assert (rows["postprocess"]["start_s"], rows["nms"]["start_s"]) == pytest.approx((0.001, 0.001))
    assert (rows["nms"]["end_s"], rows["postprocess"]["end_s"]) == pytest.approx((0.005, 0.007))
    assert listener.events == [("start", "postprocess"), ("start", "nms"), ("end", "nms"), ("end", "postprocess")]


def test_the_default_clock_measures_real_steps_in_order():
    timer = StepTimer()
    with timer.step("postprocess"):
        with timer.step("nms"):
            time.sleep(0.001)
    rows = {r["step"]: r for r in timer.rows()}
    assert rows["nms"]["ms"] >= 1.0 and rows["postprocess"]["ms"] >= rows["nms"]["ms"]
    assert rows["postprocess"]["start_s"] <= rows["nms"]["start_s"] < rows["nms"]["end_s"] <= rows["postprocess"]["end_s"]


def test_interrupted_step_is_not_a_measurement_but_listeners_close_it():
    listener = Recorder()
    timer = StepTimer([listener])
    with pytest.raises(KeyboardInterrupt):
        with timer.step("forward"):
            raise KeyboardInterrupt
    with pytest.raises(ValueError):
        with timer.step("load"):
            raise ValueError("decoder failed")
    assert timer.records == []
    assert listener.events == [("start", "forward"), ("end", "forward"), ("start", "load"), ("end", "load")]


def test_a_sibling_times_another_thread_into_the_same_records_with_its_own_steps():
    listener, clock, ended = Recorder(), SteppedClock(), []
    timer = StepTimer([listener], clock=clock)
    timer.after_batch = lambda: ended.append(len(timer.records))
    sibling = timer.sibling()
    assert sibling.origin_ns == timer.origin_ns and sibling.listeners == []
    with timer.step("run"):  # open on the first timer while the sibling times a batch of its own
        sibling.set_batch(PassKind.TIMED, 0, 7)
        with sibling.step("pipeline"):
            clock.advance_ms(2.0)
    assert [(r.step, r.parent, r.batch) for r in timer.records] == [("pipeline", None, 7), ("run", None, -1)]
    assert ended == [1]  # the sibling's batch ended as the first timer's do (the journal)
    assert listener.events == [("start", "run"), ("end", "run")]
