"""ModelTiming: wall time of every module call of a detection pipeline, keyed by call path.

    with ModelTiming(model, pre_transforms=[pre], post_transforms=[nms, scale]) as timing:
        ...run the pipeline any number of times...
    print(timing.summarize_table(top=20))

Calls are bracketed and named by HookedCalls (utils.measure.layers.call_paths).

Tree: Pipeline -> Preprocessing (pre transforms) -> Model (the model's root call) -> its modules ->
Postprocessing (post transforms). Pipeline and the two groups are sums of their children.

Self time = total - direct children's totals, from the same perf_counter_ns clock, per call. Hook bookkeeping
outside a child's own timestamps lands in its parent's self time. The model root's self time (work in
Model.forward outside any submodule: the Detect decode, torch.cat, ...) is reported as an explicit
`Model/unattributed` row and the Model row's own self time is 0, so the layer rows' self times plus
unattributed add up exactly to the model total.

MACs are counted on every call from the size of the tensor that call produced (or consumed, for transposed
convolutions) times a per-element cost fixed by the module: a multiply and an add per call. Input/output
shapes are kept from a path's first call, for the reports.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from torch import nn

from utils.measure.layers.flops import macs_rule
from utils.measure.layers.tables import layer_tree_text, top_self_table
from utils.record.layers import (KIND_GROUP, KIND_MODEL, KIND_PIPELINE, KIND_UNATTRIBUTED, POSTPROCESSING,
                                 PREPROCESSING, UNATTRIBUTED, LayerRecord, TimingSnapshot)
from utils.measure.layers.call_paths import HookedCalls, _Node, shapes_of


class ModelTiming(HookedCalls):
    """Context manager timing every module call of `model` and every transform call, per call path.

    `functional_paths`: call paths of model modules whose own work outside their children is functional code
    worth its own row (R-CNN's anchor decoding and proposal filtering in `rpn`): like the model root's, their
    self time is reported as an explicit `<path>/unattributed` row.
    """

    def __init__(self, model: nn.Module, pre_transforms: Iterable[Any] = (), post_transforms: Iterable[Any] = (),
                 functional_paths: Iterable[str] = (), clock: Callable[[], int] = time.perf_counter_ns):
        super().__init__(model, pre_transforms, post_transforms)
        self.functional_paths = frozenset(functional_paths)
        self._clock = clock  # nanoseconds; a test passes a clock it controls

    def _before_call(self, target: Any, args: Any) -> None:
        frame = [self._node_for(target), 0, 0]
        self._stack.append(frame)
        frame[1] = self._clock()

    def _after_call(self, target: Any, args: Any, output: Any) -> None:
        end_ns = self._clock()
        frame = self._pop_frame(target)
        if frame is None:
            return
        node, start_ns, children_ns = frame
        total_ns = end_ns - start_ns
        node.total_ns.append(total_ns)
        node.self_ns.append(total_ns - children_ns)
        if self._stack:
            self._stack[-1][2] += total_ns
        if not node.captured:
            self._capture(node, target, args, output)
        if node.mac_rule is not None:
            side, per_element = node.mac_rule
            counted = output if side == "output" else args[0]
            node.macs_total += per_element * counted.numel()

    @staticmethod
    def _capture(node: _Node, target: Any, args: Any, output: Any) -> None:
        node.input_shapes = shapes_of(args)
        node.output_shapes = shapes_of(output)
        if isinstance(target, nn.Module):
            node.mac_rule = macs_rule(target)
        node.captured = True

    def reset(self) -> None:
        """Drop recorded calls, MACs and the forward count (after warm-up); first-call shapes are kept."""
        for node in self._nodes.values():
            node.total_ns.clear()
            node.self_ns.clear()
            node.macs_total = 0
        self.forwards = 0
        self.images = 0
        self._stack.clear()

    def snapshot(self) -> TimingSnapshot:
        return TimingSnapshot(tuple(self._collect(self._pipeline)), self.forwards, self.images,
                              tuple(self.warnings))

    @property
    def records(self) -> list[LayerRecord]:
        return list(self.snapshot().records)

    @property
    def model_total_ms(self) -> float:
        return self.snapshot().model_total_ms

    @property
    def unattributed_ms(self) -> float:
        return self.snapshot().unattributed_ms

    def summarize_table(self, top: int = 20) -> str:
        return top_self_table(self.snapshot(), top)

    def summarize_tree(self) -> str:
        return layer_tree_text(self.snapshot())

    def _collect(self, node: _Node) -> list[LayerRecord]:
        """Records of `node`'s subtree in tree order; empty when nothing under it was called."""
        children = node.children
        if node is self._pipeline:
            order = {PREPROCESSING: 0, POSTPROCESSING: 2}
            children = sorted(children, key=lambda child: order.get(child.path, 1))
        subtrees = [rows for rows in (self._collect(child) for child in children) if rows]
        below = [row for rows in subtrees for row in rows]
        if node.kind in (KIND_PIPELINE, KIND_GROUP):
            if not subtrees:
                return []
            heads = [rows[0] for rows in subtrees]
            total_ns = sum(head.total_ns for head in heads)
            calls = max(head.calls for head in heads)
            return [self._record(node, calls, total_ns, 0, (), ())] + below
        if not node.total_ns:
            return []
        calls, total_ns = len(node.total_ns), sum(node.total_ns)
        if node.kind != KIND_MODEL and node.path not in self.functional_paths:
            own = self._record(node, calls, total_ns, sum(node.self_ns), tuple(node.total_ns),
                               tuple(node.self_ns))
            return [own] + below
        unattributed = LayerRecord(
            path=f"{node.path}/{UNATTRIBUTED}", name=UNATTRIBUTED, type=UNATTRIBUTED, kind=KIND_UNATTRIBUTED,
            depth=node.depth + 1, parent=node.path, calls=calls, total_ns=sum(node.self_ns),
            self_ns=sum(node.self_ns), call_total_ns=tuple(node.self_ns), call_self_ns=tuple(node.self_ns),
            params=0, macs_total=0, input_shapes=None, output_shapes=None)
        own = self._record(node, calls, total_ns, 0, tuple(node.total_ns), (0,) * calls)
        return [own] + below + [unattributed]

    @staticmethod
    def _record(node: _Node, calls: int, total_ns: int, self_ns: int, call_total_ns: tuple[int, ...],
                call_self_ns: tuple[int, ...]) -> LayerRecord:
        return LayerRecord(
            path=node.path, name=node.name, type=node.type_name, kind=node.kind, depth=node.depth,
            parent=node.parent.path if node.parent is not None else "", calls=calls, total_ns=total_ns,
            self_ns=self_ns, call_total_ns=call_total_ns, call_self_ns=call_self_ns, params=node.params,
            macs_total=node.macs_total, input_shapes=node.input_shapes,
            output_shapes=node.output_shapes)
