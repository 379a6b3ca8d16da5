"""The layer tables (utils/measure/layers/tables.py) from a timing on the test's clock: layer_timer.csv's columns,
percentiles and FLOPs, layer_types.csv over the model's forward only, the tree one indented line per record, the top
table by self time, and a CSV that reads back as written."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from tests.support.stepped_model import NS_PER_MS, assert_busy_time, by_path
from utils.measure.layers.tables import (LAYER_TIMER_COLUMNS, LAYER_TYPES_COLUMNS, layer_timer_frame, layer_tree_text,
                                 layer_types_frame, top_self_frame)
from utils.measure.layers.model_timing import ModelTiming


def reference_percentile(values: list[float], percent: float) -> float:
    """Linear interpolation between closest ranks, written out."""
    ordered = sorted(values)
    rank = (len(ordered) - 1) * percent / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def test_layer_timer_frame_columns_and_values(two_forwards):
    frame = layer_timer_frame(two_forwards.snapshot())
    assert list(frame.columns) == LAYER_TIMER_COLUMNS
    row = frame.set_index("path").loc["repeat"]
    record = by_path(two_forwards)["repeat"]
    call_ms = [ns / NS_PER_MS for ns in record.call_total_ns]
    assert row["calls"] == 4
    assert row["mean_total_ms"] == pytest.approx(sum(call_ms) / 4)
    assert row["p50_ms"] == pytest.approx(reference_percentile(call_ms, 50))
    assert row["p90_ms"] == pytest.approx(reference_percentile(call_ms, 90))
    assert row["name"] == "repeat" and row["type"] == "Spin"
    assert np.isnan(frame.set_index("path").loc["Pipeline", "p50_ms"])


def test_layer_timer_flops_columns():
    model = nn.Sequential(nn.Conv2d(2, 3, 1))
    with ModelTiming(model) as timing:
        model(torch.zeros(1, 2, 4, 4))
    row = layer_timer_frame(timing.snapshot()).set_index("path").loc["0"]
    assert row["macs"] == 3 * 16 * 2 and row["flops"] == 2 * row["macs"]
    assert row["gflops_per_s"] == pytest.approx(row["flops"] / (row["total_ms"] / 1000) / 1e9)
    assert row["input_shapes"] == "[[1, 2, 4, 4]]" and row["output_shapes"] == "[1, 3, 4, 4]"


def test_layer_types_cover_the_model_forward_only(two_forwards):
    snapshot = two_forwards.snapshot()
    types = layer_types_frame(snapshot)
    assert list(types.columns) == LAYER_TYPES_COLUMNS
    assert set(types["type"]) == {"Spin", "Block", "unattributed"}
    assert types["share_of_forward"].sum() == pytest.approx(1.0)
    assert list(types["self_ms"]) == sorted(types["self_ms"], reverse=True)
    spin_row = types.set_index("type").loc["Spin"]
    assert spin_row["calls"] == 8
    assert spin_row["mean_self_ms_per_forward"] == pytest.approx(spin_row["self_ms"] / 2)
    assert_busy_time(spin_row["self_ms"], 2 * 10)


def test_tree_text_has_one_indented_line_per_record(two_forwards):
    text = layer_tree_text(two_forwards.snapshot())
    lines = text.splitlines()[1:]
    records = two_forwards.records
    assert len(lines) == len(records)
    for line, record in zip(lines, records):
        node = line[35:]
        assert node == "  " * record.depth + f"{record.path} [{record.type}]"
        assert float(line[:12]) == pytest.approx(record.total_ms, abs=1e-3)
    assert two_forwards.summarize_tree() == text
    shallow = layer_tree_text(two_forwards.snapshot(), max_depth=1).splitlines()[1:]
    assert shallow == [line for line, record in zip(lines, records) if record.depth <= 1]
    assert 0 < len(shallow) < len(lines)


def test_top_table_is_sorted_by_self_time(two_forwards):
    top = top_self_frame(two_forwards.snapshot(), top=3)
    assert len(top) == 3
    assert list(top["self_ms"]) == sorted(top["self_ms"], reverse=True)
    assert top.iloc[0]["path"] == "repeat"
    assert "Model" not in set(top["path"]) and "Pipeline" not in set(top["path"])
    assert "repeat" in two_forwards.summarize_table(top=3)


def test_layer_timer_csv_round_trip(two_forwards):
    frame = layer_timer_frame(two_forwards.snapshot())
    timer = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
    assert list(timer.columns) == LAYER_TIMER_COLUMNS
    assert len(timer) == len(two_forwards.records)
    assert timer["self_ms"].tolist() == pytest.approx(frame["self_ms"].tolist())
