"""Tables and text built from a ModelTiming snapshot: layer_timer.csv, layer_types.csv, layer_tree.txt, top-N.

layer_types covers the model's forward only (its layers plus the unattributed remainder), so its shares sum
to 1; pre/post transforms are pipeline steps, not model layers, and appear in the other reports.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from utils.record.flops import achieved_gflops_per_s
from utils.record.layers import (MODEL_FORWARD_KINDS, NS_PER_MS, SOURCE_TORCH_HOOKS, SUM_KINDS, LayerRecord,
                                 TimingSnapshot)

LAYER_TIMER_COLUMNS = [
    "path", "name", "type", "depth", "parent", "calls", "total_ms", "mean_total_ms", "self_ms", "mean_self_ms",
    "child_ms", "mean_child_ms", "p50_ms", "p90_ms", "params", "macs", "flops", "macs_total", "flops_total", "gflops_per_s",
    "input_shapes", "output_shapes", "source",
]
LAYER_TYPES_COLUMNS = ["type", "calls", "self_ms", "mean_self_ms_per_forward", "share_of_forward"]



def _per_call(value: float, calls: int) -> float | None:
    return value / calls if calls else None


def _percentile_ms(durations_ns: tuple[int, ...], percent: float) -> float | None:
    if not durations_ns:
        return None
    return float(np.percentile(np.asarray(durations_ns, dtype=float), percent)) / NS_PER_MS


def _shapes_text(shapes: Any) -> str:
    return "" if shapes is None else json.dumps(shapes)


def _timer_row(record: LayerRecord) -> dict[str, Any]:
    return {
        "path": record.path,
        "name": record.name,
        "type": record.type,
        "depth": record.depth,
        "parent": record.parent,
        "calls": record.calls,
        "total_ms": record.total_ms,
        "mean_total_ms": _per_call(record.total_ms, record.calls),
        "self_ms": record.self_ms,
        "mean_self_ms": _per_call(record.self_ms, record.calls),
        "child_ms": record.child_ms,
        "mean_child_ms": _per_call(record.child_ms, record.calls),
        "p50_ms": _percentile_ms(record.call_total_ns, 50),
        "p90_ms": _percentile_ms(record.call_total_ns, 90),
        "params": record.params,
        "macs": record.macs,
        "flops": record.flops,
        "macs_total": record.macs_total,
        "flops_total": record.flops_total,
        "gflops_per_s": achieved_gflops_per_s(record.flops_total, record.total_ns / 1e9),
        "input_shapes": _shapes_text(record.input_shapes),
        "output_shapes": _shapes_text(record.output_shapes),
    }


def layer_timer_frame(snapshot: TimingSnapshot, source: str = SOURCE_TORCH_HOOKS) -> pd.DataFrame:
    """One row per call path in tree order; macs/flops mean per call and total; p50/p90 of per-call totals."""
    return pd.DataFrame([dict(_timer_row(record), source=source) for record in snapshot.records],
                        columns=LAYER_TIMER_COLUMNS)


def layer_types_frame(snapshot: TimingSnapshot) -> pd.DataFrame:
    """Self time per module type over the model forward, `unattributed` as its own type."""
    rows = [
        {"type": record.type, "calls": record.calls, "self_ns": record.self_ns}
        for record in snapshot.records if record.kind in MODEL_FORWARD_KINDS
    ]
    if not rows:
        return pd.DataFrame(columns=LAYER_TYPES_COLUMNS)
    by_type = pd.DataFrame(rows).groupby("type", as_index=False, sort=False).sum()
    by_type["self_ms"] = by_type["self_ns"] / NS_PER_MS
    forwards = snapshot.forwards
    by_type["mean_self_ms_per_forward"] = by_type["self_ms"] / forwards if forwards else None
    model_total_ms = snapshot.model_total_ms
    by_type["share_of_forward"] = by_type["self_ms"] / model_total_ms if model_total_ms > 0 else None
    by_type = by_type.sort_values("self_ns", ascending=False, kind="stable")
    return by_type[LAYER_TYPES_COLUMNS].reset_index(drop=True)


def layer_tree_text(snapshot: TimingSnapshot, max_depth: int | None = None) -> str:
    """Indented tree, Pipeline at the root: total and self ms over all calls, and the call count."""
    lines = [f"{'total_ms':>12} {'self_ms':>12} {'calls':>7}  node"]
    for record in snapshot.records:
        if max_depth is not None and record.depth > max_depth:
            continue
        indent = "  " * record.depth
        lines.append(f"{record.total_ms:12.3f} {record.self_ms:12.3f} {record.calls:7d}  "
                     f"{indent}{record.path} [{record.type}]")
    return "\n".join(lines) + "\n"


def top_self_frame(snapshot: TimingSnapshot, top: int = 20) -> pd.DataFrame:
    """The `top` call paths by self time (sum rows left out), with their share of the pipeline total."""
    pipeline_ms = snapshot.pipeline_total_ms
    rows = [
        {
            "path": record.path,
            "type": record.type,
            "calls": record.calls,
            "self_ms": record.self_ms,
            "mean_self_ms": _per_call(record.self_ms, record.calls),
            "share_of_pipeline": record.self_ms / pipeline_ms if pipeline_ms > 0 else None,
        }
        for record in snapshot.records if record.kind not in SUM_KINDS
    ]
    rows.sort(key=lambda row: row["self_ms"], reverse=True)
    return pd.DataFrame(rows[:top], columns=["path", "type", "calls", "self_ms", "mean_self_ms",
                                             "share_of_pipeline"])


def top_self_table(snapshot: TimingSnapshot, top: int = 20) -> str:
    frame = top_self_frame(snapshot, top)
    if frame.empty:
        return "(no calls recorded)\n"
    return frame.to_string(index=False, float_format=lambda value: f"{value:.3f}") + "\n"
