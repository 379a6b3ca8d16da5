"""Per-layer timing from a runtime's own profiler, as the same TimingSnapshot the torch hooks produce.

Each runtime's layer reader (pipelines/runtimes/<name>/layers.py, named in its spec) turns its profile into
node runs keyed by module path (the ONNX graph's node names: `/model.0/conv/Conv` -> `model.0.conv`); this
module turns node runs into rows.

Rows, in tree order: Pipeline (= Model, as a hooked model without transforms) -> Model -> one row per module
path -> `Model/unattributed`.
- A module whose own nodes are of one op type is one row at its path (`model.0.conv`, type `Conv`). A module
  with nodes of several op types (the Detect decode) gets one row per type, `model.77/Sigmoid`. Nodes the
  runtime inserted, with no scope (layout reorders), are `Model/<type>` rows.
- A runtime runs fused kernels: a row holds everything its kernel did. Only modules a node names get rows,
  not their ancestors: compare runtimes by summing the rows under a layer (`model.12`).
- type = the runtime's op type (ONNX Runtime `Conv`, OpenVINO `Convolution`), so layer_types groups like
  ops. name = the kernel the runtime chose, joined with "+" when a row ran several; a runtime that reports
  no kernel choice keeps the last path segment as torch rows do.
- calls = inferences a row's nodes ran in; a node has no children, so self = total. params are 0: the
  runtime's kernels do not map one to one onto our modules. MACs are counted from the ONNX graph the runtime
  ran, at each inference's input shape (pipelines/runtimes/graph_macs.py), each node's in the row whose path is
  the longest prefix of its module scope (a fused kernel's row holds its conv's); 0 where the runtime ran no
  ONNX file (an IR) or did not record its inputs' shapes.
- Model's total is the runtime's own per-inference total, whose time outside any node is the unattributed
  row (a runtime reporting nodes only has their sum, and 0 unattributed). Layer self times plus unattributed
  add up exactly to Model.

LayerRecord has no field for where timings came from: each function returns the snapshot with its source.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple, Optional

from pipelines.runtimes.graph_macs import macs_by_scope
from pipelines.runtimes.profiles import NodeRun, NodeRuns, scope_of
from pipelines.runtimes.registry import layer_reader
from utils.record.layers import (KIND_LAYER, KIND_MODEL, KIND_PIPELINE, KIND_UNATTRIBUTED, MODEL, PIPELINE,
                                 UNATTRIBUTED, LayerRecord, TimingSnapshot)


MULTIPLYING = ("Conv", "MatMul", "Gemm", "FullyConnected")  # op types (ONNX Runtime's, OpenVINO's) that carry MACs


class RuntimeTiming(NamedTuple):
    snapshot: TimingSnapshot
    source: str


def layer_timing(runs: NodeRuns, images: int) -> RuntimeTiming:
    macs = _graph_macs(runs) if runs.graph and len(runs.input_shapes) == len(runs.run_totals) else None
    return RuntimeTiming(_snapshot(list(runs.nodes), list(runs.run_totals), images, macs), runs.source)


def _graph_macs(runs: NodeRuns) -> list[dict[tuple[str, ...], int]]:
    """Per inference, the graph's MACs per module scope at that inference's input shape."""
    return [macs_by_scope(runs.graph, shape, scope_of) for shape in runs.input_shapes]


def _owner(scope: tuple[str, ...], rows: dict[str, "_Row"]) -> Optional["_Row"]:
    """The row a node of this scope belongs to: the longest row path that prefixes it (a fused kernel is keyed
    at the module holding its conv), a multiplying op's row where a module has rows of several ops."""
    for length in range(len(scope), 0, -1):
        module = ".".join(scope[:length])
        candidates = [row for row in rows.values() if row.path.split("/")[0] == module]
        if candidates:
            return next((row for row in candidates if any(tag in row.op for tag in MULTIPLYING)), candidates[0])
    return None


def profiles_layers(runtime_name: str) -> bool:
    """Whether the runtime times its layers with a profiler of its own."""
    return layer_reader(runtime_name) is not None


@dataclass
class _Row:
    path: str
    name: str
    op: str
    depth: int
    parent: str
    kernels: list[str]
    per_inference: list[int]
    ran: list[bool]
    macs: int = 0  # over the inferences it ran in


def _row_key(scope: tuple[str, ...], op: str, several_ops: bool) -> tuple[str, str, int, str]:
    """(path, name, depth, parent); Model is at depth 1, as in a hooked model's snapshot."""
    module = ".".join(scope)
    parent = ".".join(scope[:-1]) or MODEL
    if not scope:
        return f"{MODEL}/{op}", op, 2, MODEL
    if several_ops:
        return f"{module}/{op}", op, len(scope) + 2, module
    return module, scope[-1], len(scope) + 1, parent


def _natural(path: str) -> tuple:
    """model.2 before model.10; runtime-inserted Model/<type> rows after the modules."""
    parts = re.split(r"[./]", path)
    return (path.startswith(MODEL + "/"),) + tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                                                   for part in parts)


def _snapshot(nodes: list[NodeRun], run_totals: list[int], images: int,
              graph_macs: Optional[list[dict[tuple[str, ...], int]]] = None) -> TimingSnapshot:
    forwards = len(run_totals)
    ops_per_scope: dict[tuple[str, ...], set[str]] = {}
    for node in nodes:
        ops_per_scope.setdefault(node.scope, set()).add(node.op)
    rows: dict[str, _Row] = {}
    node_sums = [0] * forwards
    for node in nodes:
        path, name, depth, parent = _row_key(node.scope, node.op, len(ops_per_scope[node.scope]) > 1)
        row = rows.get(path)
        if row is None:
            row = rows[path] = _Row(path, name, node.op, depth, parent, [], [0] * forwards, [False] * forwards)
        if node.kernel and node.kernel not in row.kernels:
            row.kernels.append(node.kernel)
        row.per_inference[node.inference] += node.ns
        row.ran[node.inference] = True
        node_sums[node.inference] += node.ns
    for inference, per_scope in enumerate(graph_macs or ()):
        for scope, macs in per_scope.items():
            row = _owner(scope, rows)
            if row is not None and row.ran[inference]:
                row.macs += macs
    # A runtime's total below its nodes' sum would make shares exceed 1: the nodes' sum is the floor.
    model_totals = [max(total, summed) for total, summed in zip(run_totals, node_sums)]
    outside = tuple(total - summed for total, summed in zip(model_totals, node_sums))
    model_ns = sum(model_totals)
    records = [
        LayerRecord(path=PIPELINE, name=PIPELINE, type=PIPELINE, kind=KIND_PIPELINE, depth=0, parent="",
                    calls=forwards, total_ns=model_ns, self_ns=0, call_total_ns=(), call_self_ns=(), params=0,
                    macs_total=0, input_shapes=None, output_shapes=None),
        LayerRecord(path=MODEL, name=MODEL, type=MODEL, kind=KIND_MODEL, depth=1, parent=PIPELINE,
                    calls=forwards, total_ns=model_ns, self_ns=0, call_total_ns=tuple(model_totals),
                    call_self_ns=(0,) * forwards, params=0, macs_total=0, input_shapes=None,
                    output_shapes=None),
    ]
    for row in sorted(rows.values(), key=lambda row: _natural(row.path)):
        durations = tuple(ns for ns, ran in zip(row.per_inference, row.ran) if ran)
        records.append(LayerRecord(
            path=row.path, name="+".join(row.kernels) or row.name, type=row.op, kind=KIND_LAYER, depth=row.depth,
            parent=row.parent, calls=len(durations), total_ns=sum(durations), self_ns=sum(durations),
            call_total_ns=durations, call_self_ns=durations, params=0, macs_total=row.macs, input_shapes=None,
            output_shapes=None))
    records.append(LayerRecord(
        path=f"{MODEL}/{UNATTRIBUTED}", name=UNATTRIBUTED, type=UNATTRIBUTED, kind=KIND_UNATTRIBUTED, depth=2,
        parent=MODEL, calls=forwards, total_ns=sum(outside), self_ns=sum(outside), call_total_ns=outside,
        call_self_ns=outside, params=0, macs_total=0, input_shapes=None, output_shapes=None))
    return TimingSnapshot(tuple(records), forwards, images, ())


class RuntimeProfile:
    """Around one pass: the runtime's profiler on (`runtime.profiling()`), then `timing(forwards, images)`
    over exactly that pass's inferences."""

    def __init__(self, runtime):
        self.runtime = runtime
        self._context = None
        self._profile = None

    def __enter__(self) -> "RuntimeProfile":
        self._context = self.runtime.profiling()
        self._profile = self._context.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self._context.__exit__(*exc_info)

    def timing(self, forwards: int, images: int) -> RuntimeTiming:
        return layer_timing(layer_reader(self.runtime.name)(self._profile, forwards), images)
