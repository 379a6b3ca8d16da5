"""Tables and text built from a ModelTiming snapshot: layer_timer.csv, layer_types.csv, layer_tree.txt, top-N.

layer_types covers the model's forward only (its layers plus the unattributed remainder), so its shares sum
to 1; pre/post transforms are pipeline steps, not model layers, and appear in the other reports.

The profiled batch's memory per call path (a LayerProfile) joins here, by path: the model root's own
memory and operators go to its unattributed row, as its own time does, and the Pipeline and group rows sum
their children's totals. Rows the profiled batch did not reach have empty memory columns.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from utils.measure.layers.flops import achieved_gflops_per_s
from utils.record.layers import (KIND_GROUP, KIND_PIPELINE, KIND_UNATTRIBUTED, MODEL, MODEL_FORWARD_KINDS, NS_PER_MS,
                                 SOURCE_TORCH_HOOKS, SUM_KINDS, UNATTRIBUTED, LayerProfile, LayerRecord, TimingSnapshot)

LAYER_TIMER_COLUMNS = [
    "path", "name", "type", "depth", "parent", "calls", "total_ms", "mean_total_ms", "self_ms", "mean_self_ms",
    "child_ms", "mean_child_ms", "p50_ms", "p90_ms", "params", "macs", "flops", "macs_total", "flops_total", "gflops_per_s",
    "input_shapes", "output_shapes", "source",
]
# From the profiled batch: bytes summed over its calls there, output bytes a mean per call.
LAYER_MEMORY_COLUMNS = ["profiled_calls", "alloc_self_bytes", "alloc_total_bytes", "net_self_bytes",
                        "net_total_bytes", "output_bytes"]
LAYER_TIMER_COLUMNS += LAYER_MEMORY_COLUMNS
# The kernel a layer ran (oneDNN's implementation for torch, OpenVINO's exec type); empty where none was named.
LAYER_TIMER_COLUMNS += ["kernel"]
LAYER_OPS_COLUMNS = ["path", "op", "calls", "self_cpu_ms", "total_cpu_ms", "input_shapes"]
BYTES_PER_MIB = 2 ** 20
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


def layer_memory(snapshot: TimingSnapshot, profile: LayerProfile | None) -> dict[str, dict[str, Any]]:
    """The memory columns of every row the profiled batch reached, keyed by path (see the module's note)."""
    if profile is None:
        return {}
    measured = profile.memory_by_path()
    # A row with an unattributed child (the model root) hands its own share to that child, as its time does.
    handed_on = {record.parent for record in snapshot.records if record.kind == KIND_UNATTRIBUTED}
    rows: dict[str, dict[str, Any]] = {}
    for record in snapshot.records:
        if record.kind == KIND_UNATTRIBUTED:
            source = measured.get(record.parent)
            if source is not None:
                rows[record.path] = dict(
                    profiled_calls=source.calls, alloc_self_bytes=source.alloc_self_bytes,
                    alloc_total_bytes=source.alloc_self_bytes, net_self_bytes=source.net_self_bytes,
                    net_total_bytes=source.net_self_bytes, output_bytes=None)
        elif record.path in measured:
            source = measured[record.path]
            own = record.path not in handed_on
            rows[record.path] = dict(
                profiled_calls=source.calls, alloc_self_bytes=source.alloc_self_bytes if own else 0,
                alloc_total_bytes=source.alloc_total_bytes, net_self_bytes=source.net_self_bytes if own else 0,
                net_total_bytes=source.net_total_bytes, output_bytes=source.output_bytes)
    for record in reversed(snapshot.records):  # children come after their parent: sums build bottom-up
        if record.kind not in (KIND_PIPELINE, KIND_GROUP):
            continue
        children = [rows[child.path] for child in snapshot.records
                    if child.parent == record.path and child.path in rows]
        if children:
            rows[record.path] = dict(
                profiled_calls=max(child["profiled_calls"] for child in children), alloc_self_bytes=0,
                alloc_total_bytes=sum(child["alloc_total_bytes"] for child in children), net_self_bytes=0,
                net_total_bytes=sum(child["net_total_bytes"] for child in children), output_bytes=None)
    return rows


def layer_timer_frame(snapshot: TimingSnapshot, source: str = SOURCE_TORCH_HOOKS,
                      profile: LayerProfile | None = None, kernels: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per call path in tree order; macs/flops mean per call and total; p50/p90 of per-call totals;
    memory from the profiled batch where it ran; the kernel each path ran, where `kernels` names it."""
    memory = layer_memory(snapshot, profile)
    kernels = kernels or {}
    return pd.DataFrame([dict(_timer_row(record), source=source, **memory.get(record.path, {}),
                              kernel=kernels.get(record.path, ""))
                         for record in snapshot.records], columns=LAYER_TIMER_COLUMNS)


def layer_ops_frame(profile: LayerProfile) -> pd.DataFrame:
    """The operators each call path ran itself (the model root's under its unattributed row), in first-call
    order and by self time within a path."""
    rows = [
        {
            "path": f"{op.path}/{UNATTRIBUTED}" if op.path == MODEL else op.path,
            "op": op.op,
            "calls": op.calls,
            "self_cpu_ms": op.self_ns / NS_PER_MS,
            "total_cpu_ms": op.total_ns / NS_PER_MS,
            "input_shapes": op.input_shapes,
        }
        for op in profile.ops
    ]
    return pd.DataFrame(rows, columns=LAYER_OPS_COLUMNS)


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


def _mib(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else value / BYTES_PER_MIB


def _mib_cell(value: Any, width: int) -> str:
    mib = _mib(value)
    return f"{'-':>{width}}" if mib is None else f"{mib:{width}.3f}"


def layer_tree_text(snapshot: TimingSnapshot, max_depth: int | None = None,
                    profile: LayerProfile | None = None) -> str:
    """Indented tree, Pipeline at the root: total and self ms over all calls, and the call count; with a
    profiled batch also its allocated MiB (total and self) and the mean output MiB per call ("-": not
    reached)."""
    memory = layer_memory(snapshot, profile) if profile is not None else None
    header = f"{'total_ms':>12} {'self_ms':>12} {'calls':>7}"
    if memory is not None:
        header += f" {'alloc_MiB':>10} {'self_MiB':>10} {'out_MiB':>10}"
    lines = [header + "  node"]
    for record in snapshot.records:
        if max_depth is not None and record.depth > max_depth:
            continue
        indent = "  " * record.depth
        line = f"{record.total_ms:12.3f} {record.self_ms:12.3f} {record.calls:7d}"
        if memory is not None:
            row = memory.get(record.path, {})
            line += "".join(" " + _mib_cell(row.get(key), 10)
                            for key in ("alloc_total_bytes", "alloc_self_bytes", "output_bytes"))
        lines.append(f"{line}  {indent}{record.path} [{record.type}]")
    return "\n".join(lines) + "\n"


def top_self_frame(snapshot: TimingSnapshot, top: int = 20, profile: LayerProfile | None = None) -> pd.DataFrame:
    """The `top` call paths by self time (sum rows left out), with their share of the pipeline total; with a
    profiled batch also the MiB each allocated itself there and its mean output MiB per call."""
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
    columns = ["path", "type", "calls", "self_ms", "mean_self_ms", "share_of_pipeline"]
    if profile is not None:
        memory = layer_memory(snapshot, profile)
        for row in rows:
            measured = memory.get(row["path"], {})
            row["alloc_self_mib"] = _mib(measured.get("alloc_self_bytes"))
            row["output_mib"] = _mib(measured.get("output_bytes"))
        columns += ["alloc_self_mib", "output_mib"]
    return pd.DataFrame(rows[:top], columns=columns)


def top_self_table(snapshot: TimingSnapshot, top: int = 20, profile: LayerProfile | None = None) -> str:
    frame = top_self_frame(snapshot, top, profile)
    if frame.empty:
        return "(no calls recorded)\n"
    return frame.to_string(index=False, float_format=lambda value: f"{value:.3f}") + "\n"
