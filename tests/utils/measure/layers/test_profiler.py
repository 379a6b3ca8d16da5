"""The profiled pass: a valid Chrome trace whose step, layer and op ranges nest, and the ops table."""
from __future__ import annotations

import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")

import json
from itertools import combinations
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from torch import nn

from tests.support.helpers import Net
from utils.measure.layers.profiler import (PROFILER_OPS_COLUMNS, native_output_filtered, profile_pipeline, profiler_ops_frame,
                                     step_range)

SLACK_US = 1.0


class Scale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / 255


class TopScores:
    """A plain callable post transform."""

    def __call__(self, y: torch.Tensor) -> torch.Tensor:
        return y.flatten(1).topk(3).values


LAYER_PATHS = ["Model", "backbone", "backbone.0", "backbone.1", "head"]


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    model, pre, post = Net().eval(), Scale(), TopScores()

    def run_once() -> None:
        with step_range("preprocess"):
            x = pre(torch.full((1, 3, 16, 16), 128.0))
        with step_range("inference"):
            y = model(x)
        with step_range("postprocess"):
            post(y)

    result = profile_pipeline(run_once, model, pre_transforms=[pre], post_transforms=[post])
    return result, model, post


def complete_events(trace_json: str) -> list[dict]:
    trace = json.loads(trace_json)
    assert isinstance(trace["traceEvents"], list)
    events = [event for event in trace["traceEvents"] if event.get("ph") == "X"]
    for event in events:
        assert {"ph", "ts", "dur", "name"} <= event.keys()
    return events


def interval(event: dict) -> tuple[float, float]:
    return float(event["ts"]), float(event["ts"]) + float(event["dur"])


def contains(outer: dict, inner: dict) -> bool:
    (outer_start, outer_end), (inner_start, inner_end) = interval(outer), interval(inner)
    return outer_start - SLACK_US <= inner_start and inner_end <= outer_end + SLACK_US


def only(events: list[dict], name: str) -> dict:
    matches = [event for event in events if event["name"] == name]
    assert len(matches) == 1, name
    return matches[0]


def test_result_is_plain_data(profiled):
    result, _, _ = profiled
    assert json.loads(result.trace_json)["traceEvents"]
    assert result.ops.columns == tuple(PROFILER_OPS_COLUMNS) and result.ops.rows
    assert result.wall_ms > 0


def test_ranges_on_one_thread_are_disjoint_or_nested(profiled):
    events = complete_events(profiled[0].trace_json)
    by_thread: dict[tuple, list[dict]] = {}
    for event in events:
        by_thread.setdefault((event.get("pid"), event.get("tid")), []).append(event)
    for thread_events in by_thread.values():
        for first, second in combinations(thread_events, 2):
            (a_start, a_end), (b_start, b_end) = interval(first), interval(second)
            disjoint = a_end <= b_start + SLACK_US or b_end <= a_start + SLACK_US
            nested = contains(first, second) or contains(second, first)
            assert disjoint or nested, (first["name"], second["name"])


def test_layers_lie_inside_their_steps(profiled):
    events = complete_events(profiled[0].trace_json)
    inference = only(events, "inference")
    for path in LAYER_PATHS:
        assert contains(inference, only(events, path)), path
    assert contains(only(events, "backbone"), only(events, "backbone.0"))
    assert contains(only(events, "Model"), only(events, "head"))
    assert contains(only(events, "preprocess"), only(events, "Preprocessing/Scale"))
    assert contains(only(events, "postprocess"), only(events, "Postprocessing/TopScores"))
    convolutions = [event for event in events if event["name"] == "aten::conv2d"]
    assert len(convolutions) == 2
    assert all(contains(only(events, "Model"), conv) for conv in convolutions)


def test_hooks_and_wrappers_removed(profiled):
    _, model, post = profiled
    assert type(post) is TopScores
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks


def test_ops_csv(profiled):
    ops = pd.DataFrame(profiled[0].ops.rows, columns=profiled[0].ops.columns)
    assert list(ops.columns) == PROFILER_OPS_COLUMNS
    conv_rows = ops[ops["name"] == "aten::conv2d"]
    # Grouped by input shape: the two convolutions see different inputs.
    assert len(conv_rows) == 2 and set(conv_rows["calls"]) == {1}
    assert "[1, 3, 16, 16]" in " ".join(conv_rows["input_shapes"])
    assert (ops["total_cpu_ms"] >= ops["self_cpu_ms"] - 1e-9).all()
    assert list(ops["self_cpu_ms"]) == sorted(ops["self_cpu_ms"], reverse=True)


def test_profiler_ops_frame_converts_microseconds():
    events = [
        SimpleNamespace(key="aten::add", self_cpu_time_total=1500.0, cpu_time_total=2000.0, count=3,
                        input_shapes=[[2, 2], [2, 2]]),
        SimpleNamespace(key="aten::mul", self_cpu_time_total=2500.0, cpu_time_total=2500.0, count=1,
                        input_shapes=[]),
    ]
    frame = profiler_ops_frame(events)
    assert list(frame["name"]) == ["aten::mul", "aten::add"]
    assert list(frame["self_cpu_ms"]) == [2.5, 1.5]
    assert list(frame["total_cpu_ms"]) == [2.5, 2.0]
    assert list(frame["calls"]) == [1, 3]
    assert frame.loc[1, "input_shapes"] == "[[2, 2], [2, 2]]"


def test_hooks_removed_when_run_once_raises(tmp_path):
    model = Net()

    def run_once() -> None:
        model(torch.zeros(1, 3, 4, 4))
        raise RuntimeError("pipeline failed")

    with pytest.raises(RuntimeError, match="pipeline failed"):
        profile_pipeline(run_once, model)
    assert all(not module._forward_hooks and not module._forward_pre_hooks for module in model.modules())


def test_native_profiler_noise_is_dropped_and_other_lines_kept(capfd):
    with native_output_filtered():
        os.write(1, b"USDT profiler_start line from native code\n")
        os.write(2, b"a real warning\n")
    captured = capfd.readouterr()
    assert "USDT" not in captured.out + captured.err
    assert "a real warning" in captured.err
