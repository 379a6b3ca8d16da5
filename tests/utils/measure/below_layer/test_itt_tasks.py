"""ITT tasks for VTune. No VTune collector exists here: torch's ITT binding is called for real (it must not fail
and must be available in this build), and the nesting is checked with a recording stand-in for push/pop."""
import pytest
import torch
from torch import nn

from utils.measure.below_layer.itt_tasks import IttTasks, itt_status
from utils.measure.steps.step_timer import StepTimer


class Recorder:
    def __init__(self):
        self.calls, self.depth, self.max_depth = [], 0, 0

    def push(self, name):
        self.calls.append(("push", name))
        self.depth += 1
        self.max_depth = max(self.max_depth, self.depth)

    def pop(self):
        assert self.depth > 0, "pop without a push"
        self.calls.append(("pop", None))
        self.depth -= 1


class Fails(nn.Module):
    def forward(self, x):
        raise RuntimeError("inside a layer")


def test_torch_build_has_itt():
    status = itt_status()
    assert status["available"] is torch.profiler.itt.is_available()
    assert status["available"], "this torch build lacks ITT; profiling.itt would only be reported unavailable"


def test_steps_and_layers_nest_and_balance():
    recorder = Recorder()
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    tasks = IttTasks(model, recorder.push, recorder.pop)
    timer = StepTimer([tasks])
    with tasks, torch.inference_mode():
        with timer.step("pipeline"):
            with timer.step("forward"):
                model(torch.randn(1, 3, 8, 8))
    names = [name for kind, name in recorder.calls if kind == "push"]
    assert names == ["pipeline", "forward", "Model", "0", "1"]
    assert recorder.depth == 0 and tasks.depth == 0 and recorder.max_depth == 4
    assert not model._forward_hooks and not model[0]._forward_pre_hooks  # every hook removed


def test_a_failing_layer_leaves_no_task_open():
    recorder = Recorder()
    model = nn.Sequential(nn.ReLU(), Fails())
    tasks = IttTasks(model, recorder.push, recorder.pop)
    timer = StepTimer([tasks])
    with pytest.raises(RuntimeError):
        with tasks:
            with timer.step("forward"):
                model(torch.randn(2))
    assert recorder.depth == 0  # the failed layer's and the model's tasks closed with their step


def test_real_itt_calls_run_without_a_collector():
    tasks = IttTasks(nn.ReLU())
    timer = StepTimer([tasks])
    with tasks:
        with timer.step("forward"):
            tasks.model(torch.randn(2))
    assert tasks.tasks == 2 and tasks.depth == 0
