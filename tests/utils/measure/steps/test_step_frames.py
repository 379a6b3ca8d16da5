"""The frame a step's work runs in (utils/measure/steps/step_frames.py), named after the step, so that sampled stacks
say which step they were taken in."""
from utils.measure.steps.step_frames import in_step_frame
from utils.record.steps import STEP_FRAME_PREFIX


def test_the_work_of_a_step_runs_in_a_frame_named_after_it():
    import sys

    def work(value):
        return sys._getframe(1).f_code.co_name, value * 2

    assert in_step_frame("forward", work, 21) == (STEP_FRAME_PREFIX + "forward", 42)
    assert in_step_frame("load", work, 1)[0] == STEP_FRAME_PREFIX + "load"
