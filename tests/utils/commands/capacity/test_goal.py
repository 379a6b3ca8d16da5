"""The race's goal for capacity (utils/commands/capacity/goal.py): a camera run's frames detected per second as ms per
frame, lower is better, said in cameras' worth at the cameras' rate."""
from utils.commands.capacity.goal import ServedGoal
from utils.commands.sweep.answer import PointFigures


def figures(rate):
    return PointFigures("way", {}, 0.0, None, "equal", frames_per_s=rate)


def test_frames_per_second_become_a_cost_in_ms_per_frame():
    goal = ServedGoal(fps=15.0)
    assert goal.cost(figures(40.0)) == 25.0 and goal.samples(figures(40.0)) == (25.0,)
    assert goal.cost(figures(None)) is None and goal.cost(None) is None and goal.samples(figures(0.0)) == ()


def test_a_cost_is_said_in_cameras_worth_when_the_rate_is_known():
    assert ServedGoal(fps=15.0).shown(25.0) == "40.00 frames/s detected, about 2.7 cameras' worth"
    assert ServedGoal(fps=None).shown(25.0) == "40.00 frames/s detected"
    assert ServedGoal(fps=None).overrides() == ["benchmark.scenario=cameras"]
