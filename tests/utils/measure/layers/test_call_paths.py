"""utils.measure.layers.call_paths: HookedCalls brackets every call of a model's modules and of the pipeline's
transforms from outside and names each call by its call path; shapes_of describes a call's inputs and outputs.

Tested through a minimal subclass that only notes the node of each call: the paths and kinds of module and
transform calls, shared and repeated modules, forward and image counts, the hooks and class swaps all undone
on exit (also after a failure), and the refusals and warnings for what cannot be bracketed."""
import numpy as np
import pytest
import torch
from torch import nn

from utils.record.layers import KIND_LAYER, KIND_MODEL, KIND_TRANSFORM, MODEL, POSTPROCESSING, PREPROCESSING
from utils.measure.layers.call_paths import HookedCalls, shapes_of


class NotedCalls(HookedCalls):
    """Notes the node of every call, in call order."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def _before_call(self, target, args):
        node = self._node_for(target)
        self._stack.append([node])
        self.calls.append(node)

    def _after_call(self, target, args, output):
        self._pop_frame(target)

    def paths(self):
        return [node.path for node in self.calls]


class Block(nn.Module):
    def __init__(self, act: nn.Module):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)
        self.act = act

    def forward(self, x):
        return self.act(self.conv(x))


class Detector(nn.Module):
    """Two blocks sharing one activation, a head called twice, and a grandchild called from the top."""

    def __init__(self):
        super().__init__()
        shared = nn.ReLU()
        self.first = Block(shared)
        self.second = Block(shared)
        self.head = nn.Identity()

    def forward(self, x):
        x = self.head(self.head(self.second(self.first(x))))
        return self.first.conv(x)


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor


def hooked_model_calls(batch=2):
    model = Detector()
    with NotedCalls(model) as hooked:
        model(torch.zeros(batch, 2, 3, 3))
    return model, hooked


def test_shapes_of_tensors_arrays_and_containers():
    value = (torch.zeros(2, 3), [np.zeros((4,))], {"boxes": torch.zeros(0, 4), "n": 3}, "text")
    assert shapes_of(value) == [[2, 3], [[4]], {"boxes": [0, 4], "n": None}, None]


def test_model_calls_are_named_as_in_named_modules():
    _, hooked = hooked_model_calls()
    assert hooked.paths() == [MODEL, "first", "first.conv", "first.act", "second", "second.conv", "second.act",
                              "head", "head", "first.conv"]
    assert hooked.calls[0].kind == KIND_MODEL
    assert {node.kind for node in hooked.calls[1:]} == {KIND_LAYER}
    assert hooked.calls[2].name == "conv" and hooked.calls[2].type_name == "Conv2d"
    assert hooked.calls[2].parent is hooked.calls[1]


def test_a_shared_module_is_one_path_per_parent():
    _, hooked = hooked_model_calls()
    first_act, second_act = hooked.calls[3], hooked.calls[6]
    assert (first_act.path, second_act.path) == ("first.act", "second.act")
    assert first_act is not second_act


def test_the_same_module_twice_under_one_parent_is_one_path():
    _, hooked = hooked_model_calls()
    assert hooked.calls[7] is hooked.calls[8]


def test_a_grandchild_called_by_the_model_keeps_its_qualified_name():
    _, hooked = hooked_model_calls()
    direct = hooked.calls[9]
    assert (direct.path, direct.name, direct.parent.path) == ("first.conv", "conv", MODEL)
    assert direct is not hooked.calls[2]  # called under another parent than in the first block


def test_a_module_outside_the_callers_subtree_is_named_under_the_caller():
    class Outer(nn.Module):
        def __init__(self, other):
            super().__init__()
            self.inner = nn.Identity()
            self.other = [other]  # not a child: outside the model's tree

        def forward(self, x):
            return self.other[0](self.inner(x))

    post = nn.Identity()
    model = Outer(post)
    with NotedCalls(model, post_transforms=[post]) as hooked:
        model(torch.zeros(1))
    assert hooked.paths() == [MODEL, "inner", f"{MODEL}/{POSTPROCESSING}/Identity"]
    assert hooked.calls[2].name == "Identity"


def test_forwards_and_images_count_root_calls_and_their_batch():
    model = Detector()
    with NotedCalls(model) as hooked:
        model(torch.zeros(3, 2, 3, 3))
        model(torch.zeros(1, 2, 3, 3))
    assert (hooked.forwards, hooked.images) == (2, 4)


def test_transforms_are_named_under_their_group_with_copies_numbered():
    model = nn.Identity()
    first, second, post = Scale(2), Scale(3), nn.ReLU()
    with NotedCalls(model, pre_transforms=[first, second], post_transforms=[post]) as hooked:
        model(post(second(first(torch.ones(1)))))
    assert hooked.paths() == [f"{PREPROCESSING}/Scale", f"{PREPROCESSING}/Scale#2", f"{POSTPROCESSING}/ReLU",
                              MODEL]
    assert [node.kind for node in hooked.calls] == [KIND_TRANSFORM, KIND_TRANSFORM, KIND_TRANSFORM, KIND_MODEL]
    assert hooked.calls[0].parent.path == PREPROCESSING


def test_a_swapped_transform_gets_its_class_back_and_still_computes():
    transform = Scale(2)
    with NotedCalls(nn.Identity(), pre_transforms=[transform]):
        assert type(transform) is not Scale and isinstance(transform, Scale)
        assert transform(torch.ones(1)).item() == 2
    assert type(transform) is Scale


def test_every_hook_is_removed_on_exit():
    model = Detector()
    with NotedCalls(model):
        assert model.first.conv._forward_pre_hooks
    for module in model.modules():
        assert not module._forward_pre_hooks and not module._forward_hooks


def test_a_forward_that_raises_still_closes_its_call():
    class Failing(nn.Module):
        def forward(self, x):
            raise ValueError("broken layer")

    model = nn.Sequential(nn.Identity(), Failing())
    with NotedCalls(model) as hooked:
        with pytest.raises(ValueError, match="broken layer"):
            model(torch.zeros(1))
        assert hooked._stack == []


def test_a_plain_function_is_refused_with_the_fix_and_nothing_stays_hooked():
    model = nn.Sequential(nn.ReLU())
    with pytest.raises(TypeError, match="wrap plain functions in such an object"):
        with NotedCalls(model, pre_transforms=[lambda x: x]):
            pass
    assert not model[0]._forward_pre_hooks


def test_pop_frame_drops_the_frames_of_calls_that_never_closed():
    model = nn.Sequential(nn.ReLU(), nn.Identity())
    with NotedCalls(model) as hooked:
        outer = hooked._node_for(model)
        hooked._stack.append([outer])
        inner = hooked._node_for(model[0])
        hooked._stack.append([inner])
        assert hooked._pop_frame(model) == [outer]
        assert hooked._stack == []
        assert hooked._pop_frame(model[1]) is None


def test_a_scripted_module_warns_that_only_its_outer_call_is_timed():
    model = nn.Sequential(torch.jit.script(nn.ReLU()))
    with pytest.warns(UserWarning, match="TorchScript"):
        with NotedCalls(model) as hooked:
            model(torch.zeros(1))
    assert "0 (RecursiveScriptModule)" in hooked.warnings[0]
    assert hooked.paths() == [MODEL, "0"]


def test_a_compiled_module_warns_that_layer_times_do_not_describe_it():
    model = nn.Sequential(nn.ReLU())
    model._orig_mod = nn.ReLU()  # what torch.compile's wrapper holds
    with pytest.warns(UserWarning, match="torch.compile'd"):
        with NotedCalls(model) as hooked:
            pass
    assert hooked.warnings[0].startswith(f"{MODEL} is a torch.compile'd module")
