"""ModelTiming against known durations on a clock the test controls, hook hygiene, and the layer reports built
from it."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from utils.measure.layers.tables import (layer_timer_frame)
from tests.support.stepped_model import (NS_PER_MS, Spin, SpinStep, assert_busy_time, by_path, spin)
from utils.measure.layers.model_timing import ModelTiming, shapes_of


class SlottedStep:
    __slots__ = ("ms",)

    def __init__(self, ms: float):
        self.ms = ms

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        spin(self.ms)
        return x


# Per forward: path -> (calls, total ms, self ms) on the test's clock.
EXPECTED_PER_FORWARD = {
    "first": (1, 3, 1),
    "first.child": (1, 2, 2),
    "second": (1, 3, 1),
    "second.child": (1, 2, 2),
    "repeat": (2, 6, 6),
    "Model/unattributed": (1, 1, 1),
    "Model": (1, 13, 0),
}


def hook_dicts(module: nn.Module) -> list[dict]:
    return [module._forward_hooks, module._forward_pre_hooks, module._forward_hooks_with_kwargs,
            module._forward_hooks_always_called, module._forward_pre_hooks_with_kwargs]


def assert_no_hooks(model: nn.Module) -> None:
    for name, module in model.named_modules(remove_duplicate=False):
        assert all(len(hooks) == 0 for hooks in hook_dicts(module)), name


def test_busy_wait_totals_self_and_calls_per_call_path(two_forwards):
    records = by_path(two_forwards)
    assert two_forwards.forwards == 2
    for path, (calls, total_ms, self_ms) in EXPECTED_PER_FORWARD.items():
        record = records[path]
        assert record.calls == 2 * calls, path
        assert_busy_time(record.total_ms, 2 * total_ms)
        if path != "Model":
            assert_busy_time(record.self_ms, 2 * self_ms)
    assert records["Model"].self_ms == 0
    assert records["first.child"].type == "Spin"
    assert records["repeat"].parent == "Model"
    assert records["first.child"].parent == "first"
    assert records["first.child"].depth == records["first"].depth + 1


def test_shared_instance_is_not_double_counted(two_forwards):
    records = by_path(two_forwards)
    shared_paths = [path for path in records if path.endswith(".child")]
    assert sorted(shared_paths) == ["first.child", "second.child"]
    layer_self_ns = sum(r.self_ns for r in records.values() if r.kind == "layer")
    assert layer_self_ns + records["Model/unattributed"].self_ns == records["Model"].total_ns


def test_every_node_self_plus_children_equals_total(two_forwards):
    records = two_forwards.records
    for record in records:
        children_ns = sum(child.total_ns for child in records if child.parent == record.path)
        assert record.self_ns + children_ns == record.total_ns, record.path
        assert record.self_ns >= 0


def test_pipeline_is_the_sum_of_its_steps(two_forwards):
    records = by_path(two_forwards)
    top_level = [records["Preprocessing"], records["Model"], records["Postprocessing"]]
    assert [r.parent for r in top_level] == ["Pipeline"] * 3
    assert records["Pipeline"].total_ns == sum(r.total_ns for r in top_level)
    assert [r.path for r in two_forwards.records][:2] == ["Pipeline", "Preprocessing"]
    assert_busy_time(records["Preprocessing/SpinStep"].total_ms, 4)
    assert records["Preprocessing/SpinStep"].kind == "transform"


def test_unattributed_closes_the_model_total(two_forwards):
    records = by_path(two_forwards)
    layer_self_ms = sum(r.self_ms for r in records.values() if r.kind == "layer")
    assert layer_self_ms + two_forwards.unattributed_ms == pytest.approx(two_forwards.model_total_ms, rel=1e-12)
    assert two_forwards.model_total_ms == records["Model"].total_ms
    assert_busy_time(two_forwards.unattributed_ms, 2)


def test_per_call_durations_are_kept(two_forwards):
    record = by_path(two_forwards)["repeat"]
    assert len(record.call_total_ns) == 4
    assert sum(record.call_total_ns) == record.total_ns
    assert all(3 * NS_PER_MS <= duration for duration in record.call_total_ns)


def test_reset_drops_calls_and_keeps_first_call_shapes():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
    with ModelTiming(model) as timing:
        model(torch.zeros(1, 3, 8, 8))
        timing.reset()
        assert timing.records == [] and timing.forwards == 0
        model(torch.zeros(1, 3, 8, 8))
        model(torch.zeros(1, 3, 8, 8))
    records = by_path(timing)
    assert timing.forwards == 2
    assert records["0"].calls == 2
    assert records["0"].input_shapes == [[1, 3, 8, 8]]
    assert records["0"].output_shapes == [1, 4, 6, 6]
    assert records["0"].macs == 4 * 6 * 6 * 3 * 9
    assert records["0"].params == 4 * 3 * 9 + 4


def test_shapes_of_nested_outputs():
    value = (torch.zeros(2, 3), [torch.zeros(4), None], {"a": torch.zeros(1, 1)})
    assert shapes_of(value) == [[2, 3], [[4], None], {"a": [1, 1]}]


def test_hooks_removed_outputs_unchanged_and_class_restored():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.SiLU()).eval()
    step = SlottedStep(0)
    x = torch.randn(1, 3, 8, 8)
    before = model(x)
    with ModelTiming(model, post_transforms=[step]) as timing:
        inside = step(model(x))
        assert type(step) is not SlottedStep
    assert type(step) is SlottedStep
    assert_no_hooks(model)
    assert torch.equal(model(x), before) and torch.equal(inside, before)
    assert by_path(timing)["Postprocessing/SlottedStep"].calls == 1


def test_hooks_removed_when_the_body_raises():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    step = SpinStep(0)
    with pytest.raises(RuntimeError, match="boom"):
        with ModelTiming(model, pre_transforms=[step]):
            model(torch.zeros(1, 2))
            raise RuntimeError("boom")
    assert_no_hooks(model)
    assert type(step) is SpinStep


class Failing(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("bad layer")


def test_a_forward_that_raises_still_closes_its_calls():
    model = nn.Sequential(Spin(1), Failing())
    with ModelTiming(model) as timing:
        with pytest.raises(ValueError):
            model(torch.zeros(1))
        model[0](torch.zeros(1))
    records = by_path(timing)
    # The stack was unwound: the later standalone call is not filed under the failed forward.
    assert records["Pipeline/0"].calls == 1
    assert records["0"].calls == 1 and records["1"].calls == 1
    assert records["0"].parent == "Model"


def test_plain_function_transform_is_rejected_and_nothing_left_behind():
    model = nn.Sequential(nn.ReLU())
    with pytest.raises(TypeError, match="wrap plain functions"):
        with ModelTiming(model, pre_transforms=[lambda x: x]):
            pass
    assert_no_hooks(model)


def test_duplicate_transform_names_get_distinct_paths():
    first, second = SpinStep(0), SpinStep(0)
    model = nn.Identity()
    with ModelTiming(model, post_transforms=[first, second]) as timing:
        second(first(model(torch.zeros(1))))
    assert {"Postprocessing/SpinStep", "Postprocessing/SpinStep#2"} <= set(by_path(timing))


@pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning")
def test_scripted_model_warns_and_times_its_outer_call():
    scripted = torch.jit.script(nn.Sequential(nn.Conv2d(1, 1, 1), nn.ReLU()))
    original_class = type(scripted)
    with pytest.warns(UserWarning, match="cannot see inside"):
        timing = ModelTiming(scripted)
        timing.__enter__()
    try:
        scripted(torch.zeros(1, 1, 4, 4))
    finally:
        timing.__exit__(None, None, None)
    assert type(scripted) is original_class
    assert len(timing.warnings) == 1 and "TorchScript" in timing.warnings[0]
    records = by_path(timing)
    assert records["Model"].calls == 1 and timing.forwards == 1
    assert {r.kind for r in records.values()} == {"pipeline", "model", "unattributed"}


@pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning")
def test_traced_model_warns():
    traced = torch.jit.trace(nn.Sequential(nn.Linear(2, 2)), torch.zeros(1, 2))
    with pytest.warns(UserWarning, match="TorchScript"):
        with ModelTiming(traced) as timing:
            traced(torch.zeros(1, 2))
    assert by_path(timing)["Model"].calls == 1
    assert all(len(hooks) == 0 for hooks in hook_dicts(traced))


# Reports


def test_macs_count_every_calls_real_shapes():
    """A batch of 3 after a batch of 1, and a differently shaped image: MACs follow each call, not the first."""
    conv = nn.Conv2d(2, 3, 3, padding=1)
    model = nn.Sequential(conv, nn.ReLU())
    per_output_element = 2 * 9
    with ModelTiming(model) as timing:
        model(torch.zeros(1, 2, 4, 4))
        model(torch.zeros(3, 2, 4, 4))
        model(torch.zeros(1, 2, 8, 2))
    record = by_path(timing)["0"]
    expected = per_output_element * 3 * (1 * 16 + 3 * 16 + 1 * 16)
    assert record.macs_total == expected
    assert record.macs == pytest.approx(expected / 3)
    snapshot = timing.snapshot()
    assert snapshot.forwards == 3 and snapshot.images == 5
    assert snapshot.flops_per_image == pytest.approx(2 * expected / 5)
    row = layer_timer_frame(snapshot).set_index("path").loc["0"]
    assert row["macs_total"] == expected and row["flops_total"] == 2 * expected
