"""utils.measure.steps.module_steps: ModuleSteps times each call of chosen parts of a network (R-CNN's backbone,
rpn, roi_heads) as a step of a StepTimer, nested in the step open when it runs, with forward hooks.

Tested on a tiny two-part network: one step per call with its parent, the part's step opening before and
closing after any other hook on it, no record for a part whose forward raised or that a stop cut short, and
every hook removed on exit."""
import pytest
import torch
from torch import nn

from utils.measure.steps.module_steps import ModuleSteps
from utils.measure.steps.step_timer import StepTimer


class Failing(nn.Module):
    def forward(self, x):
        raise ValueError("broken part")


def network():
    return nn.Sequential(nn.Conv2d(1, 1, 1), nn.ReLU())


def test_each_call_of_a_part_is_a_step_inside_the_open_one():
    net, timer = network(), StepTimer()
    with ModuleSteps(timer, [("backbone", net[0]), ("head", net[1])]):
        with timer.step("forward"):
            net(torch.zeros(1, 1, 2, 2))
            net[0](torch.zeros(1, 1, 2, 2))
    assert [(r.step, r.parent) for r in timer.records] == [
        ("backbone", "forward"), ("head", "forward"), ("backbone", "forward"), ("forward", None)]


def test_a_part_step_brackets_the_parts_other_hooks():
    net, timer, seen = network(), StepTimer(), []
    net[0].register_forward_pre_hook(lambda module, args: seen.append(list(timer._stack)))
    net[0].register_forward_hook(lambda module, args, output: seen.append(list(timer._stack)))
    with ModuleSteps(timer, [("backbone", net[0])]):
        net(torch.zeros(1, 1, 2, 2))
    assert seen == [["backbone"], ["backbone"]]


def test_a_part_whose_forward_raised_is_no_measurement():
    part, timer = Failing(), StepTimer()
    with ModuleSteps(timer, [("rpn", part)]):
        with pytest.raises(ValueError, match="broken part"):
            part(torch.zeros(1))
    assert timer.records == [] and timer._stack == []


def test_a_part_cut_short_is_closed_unrecorded_on_exit():
    net, timer = network(), StepTimer()
    steps = ModuleSteps(timer, [("backbone", net[0])])
    with steps:
        steps._opener("backbone")(net[0], ())  # a call whose closing hook a stop never let run
        assert timer._stack == ["backbone"]
    assert timer._stack == [] and timer.records == []


def test_every_hook_is_removed_on_exit():
    net, timer = network(), StepTimer()
    with ModuleSteps(timer, [("backbone", net[0])]):
        pass
    assert not net[0]._forward_pre_hooks and not net[0]._forward_hooks
    net(torch.zeros(1, 1, 2, 2))
    assert timer.records == []
