"""Per-layer timing from a runtime's own profiler, as the same TimingSnapshot the torch hooks produce.

ONNX Runtime writes a profile JSON (Chrome trace format) with one `<node>_kernel_time` event per node run and
one `model_run` event per inference; OpenVINO reports performance counters per node after each inference.
Both name nodes after the ONNX graph, which the legacy exporter names `/<module scope>/<OpType>[_<n>]`:
`/model.0/conv/Conv` -> module path `model.0.conv`, `/model.77/m.0/Conv` -> `model.77.m.0`. The scope ends
at the first segment that starts with a capital letter (ONNX op types are CamelCase, module attributes are
not), so OpenVINO's `/model.1/conv/Conv/WithoutBiases` is `model.1.conv` too.

Rows, in tree order: Pipeline (= Model, as a hooked model without transforms) -> Model -> one row per module
path -> `Model/unattributed`.
- A module whose own nodes are of one op type is one row at its path (`model.0.conv`, type `Conv`). A module
  with nodes of several op types (the Detect decode) gets one row per type, `model.77/Sigmoid`. Nodes the
  runtime inserted, with no scope (layout reorders), are `Model/<type>` rows.
- A runtime runs fused kernels: a row holds everything its kernel did. ONNX Runtime names a fused
  Conv+LeakyRelu after the activation's output (`/model.0/act/LeakyRelu_output_0_nchwc`, op Conv), so a
  node whose name is of another op than it runs is keyed at the module holding both (`model.0`); OpenVINO
  names it after the conv (`model.1.conv`). Only modules a node names get rows, not their ancestors: compare
  runtimes by summing the rows under a layer (`model.12`).
- type = the runtime's op type (ONNX Runtime `Conv`, OpenVINO `Convolution`), so layer_types groups like
  ops. name = OpenVINO's exec_type, the kernel it chose (`brgconv_avx512_amx_1x1_bf16` says AMX and bf16),
  joined with "+" when a row ran several; ONNX Runtime reports no kernel choice, so its rows keep the last
  path segment as torch rows do.
- calls = inferences a row's nodes ran in; a node has no children, so self = total. params and MACs are 0:
  the runtime's kernels do not map one to one onto our modules.
- Model's total is the runtime's own per-inference total: ONNX Runtime's `model_run`, whose time outside
  any node (input binding, executor) is the unattributed row; OpenVINO reports nodes only, so Model is their
  sum and unattributed is 0. Layer self times plus unattributed add up exactly to Model.

LayerRecord has no field for where timings came from: each function returns the snapshot with its source.
"""
from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Union

from pipelines.runtimes.profiles import NodeCounter
from utils.record.layers import (KIND_LAYER, KIND_MODEL, KIND_PIPELINE, KIND_UNATTRIBUTED, MODEL, PIPELINE,
                                 UNATTRIBUTED, LayerRecord, TimingSnapshot)

SOURCE_ONNXRUNTIME = "onnxruntime profiler"
SOURCE_OPENVINO = "openvino performance counters"

KERNEL_SUFFIX = "_kernel_time"
EXECUTED = "EXECUTED"
NS_PER_US = 1000


class RuntimeTiming(NamedTuple):
    snapshot: TimingSnapshot
    source: str


@dataclass(frozen=True)
class _NodeRun:
    inference: int
    scope: tuple[str, ...]  # module path segments; () for nodes the runtime inserted
    op: str
    kernel: str  # the row's name for OpenVINO; "" when the runtime reports none
    ns: int


def scope_of(node_name: str) -> tuple[str, ...]:
    """`/model.77/m.0/Conv_output_0_nchwc` -> ("model.77", "m.0"); a name without a leading "/" -> ()."""
    if not node_name.startswith("/"):
        return ()
    scope: list[str] = []
    for segment in node_name[1:].split("/"):
        if not segment or segment[0].isupper():
            break
        scope.append(segment)
    return tuple(scope)


def onnxruntime_scope(node_name: str, op: str) -> tuple[str, ...]:
    scope = scope_of(node_name)
    label = node_name.rsplit("/", 1)[-1].split("_", 1)[0]
    # Named after another op's output: the kernel fused that op (Conv+LeakyRelu named after the LeakyRelu
    # in model.0.act), so it belongs to the module holding both.
    if len(scope) > 1 and label != op:
        return scope[:-1]
    return scope


def onnxruntime_layers(profile_json_path: Union[Path, str], forwards: int, images: int) -> RuntimeTiming:
    """Per-layer rows from an ONNX Runtime profile; its last `forwards` runs are the pass (earlier ones, such
    as the profiling session's warm-up, are left out)."""
    events = json.loads(Path(profile_json_path).read_text())
    runs = sorted((event for event in events if event.get("cat") == "Session" and event.get("name") == "model_run"),
                  key=lambda event: event["ts"])
    kept = _last_runs(runs, forwards, SOURCE_ONNXRUNTIME)
    starts = [run["ts"] for run in kept]
    nodes = []
    for event in events:
        name = event.get("name", "")
        if event.get("cat") != "Node" or not name.endswith(KERNEL_SUFFIX):
            continue  # fences and session events are not node work
        inference = bisect.bisect_right(starts, event["ts"]) - 1
        if inference < 0 or event["ts"] > starts[inference] + kept[inference]["dur"]:
            continue  # a run before the pass
        node_name = name[:-len(KERNEL_SUFFIX)]
        op = event.get("args", {}).get("op_name") or node_name.rsplit("/", 1)[-1].split("_", 1)[0]
        nodes.append(_NodeRun(inference, onnxruntime_scope(node_name, op), op, "", int(event["dur"]) * NS_PER_US))
    run_totals = [int(run["dur"]) * NS_PER_US for run in kept]
    return RuntimeTiming(_snapshot(nodes, run_totals, images), SOURCE_ONNXRUNTIME)


def openvino_layers(counters: Iterable[NodeCounter], forwards: int, images: int) -> RuntimeTiming:
    """Per-layer rows from OpenVINO counters; the last `forwards` inferences among them are the pass."""
    executed = [counter for counter in counters if counter.status == EXECUTED]
    inferences = sorted({counter.inference for counter in executed})
    kept = {inference: index for index, inference in enumerate(_last_runs(inferences, forwards, SOURCE_OPENVINO))}
    nodes = [_NodeRun(kept[counter.inference], scope_of(counter.node_name), counter.node_type, counter.exec_type,
                      round(counter.real_time_us * NS_PER_US))
             for counter in executed if counter.inference in kept]
    # OpenVINO reports nodes only: each inference's total is its nodes' sum.
    run_totals = [0] * len(kept)
    for node in nodes:
        run_totals[node.inference] += node.ns
    return RuntimeTiming(_snapshot(nodes, run_totals, images), SOURCE_OPENVINO)


def _last_runs(runs: Sequence, forwards: int, source: str) -> Sequence:
    if forwards < 1 or len(runs) < forwards:
        raise ValueError(f"{source}: {len(runs)} inference(s) recorded, fewer than the {forwards} forward(s) of "
                         "the pass: was the pass run inside the runtime's profiling() context?")
    return runs[len(runs) - forwards:]


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


def _snapshot(nodes: list[_NodeRun], run_totals: list[int], images: int) -> TimingSnapshot:
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
            call_total_ns=durations, call_self_ns=durations, params=0, macs_total=0, input_shapes=None,
            output_shapes=None))
    records.append(LayerRecord(
        path=f"{MODEL}/{UNATTRIBUTED}", name=UNATTRIBUTED, type=UNATTRIBUTED, kind=KIND_UNATTRIBUTED, depth=2,
        parent=MODEL, calls=forwards, total_ns=sum(outside), self_ns=sum(outside), call_total_ns=outside,
        call_self_ns=outside, params=0, macs_total=0, input_shapes=None, output_shapes=None))
    return TimingSnapshot(tuple(records), forwards, images, ())


# How each runtime's profile becomes a snapshot; a runtime without an entry gets no per-layer timing.
_CONVERTERS = {
    "onnxruntime": lambda profile, forwards, images: onnxruntime_layers(profile.path, forwards, images),
    "openvino": lambda profile, forwards, images: openvino_layers(profile.counters, forwards, images),
}


def profiles_layers(runtime_name: str) -> bool:
    return runtime_name in _CONVERTERS


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
        return _CONVERTERS[self.runtime.name](self._profile, forwards, images)
