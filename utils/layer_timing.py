"""ModelTiming: wall time of every module call of a detection pipeline, keyed by call path.

    with ModelTiming(model, pre_transforms=[pre], post_transforms=[nms, scale]) as timing:
        ...run the pipeline any number of times...
    print(timing.summarize_table(top=20))

How calls are seen:
- nn.Modules (the model, every submodule, nn.Module transforms) get a forward pre-hook and a forward hook
  (always_call, so a forward that raises still closes its call).
- Other callable objects, and TorchScript modules (which refuse Python hooks), get a per-instance class
  swap: `obj.__class__` becomes a throwaway subclass whose `__call__` brackets the original one. On exit
  every hook handle is removed and every swapped object gets its own class back, even if the body raised.
- Plain functions cannot be intercepted from outside (the caller holds the function itself): wrap them in
  an object with `__call__` or an nn.Module.

Call paths: a stack of active calls, pushed and popped by the hooks, gives each call its parent. A call of a
direct child of the active module is named `<parent path>.<attribute>` (the model's own children start
fresh, so paths read `model.24.conv`), which names a shared module (one SiLU used by many Conv layers) by
each parent it runs under. Any other call is named `<parent path>/<its first qualified name>`. The same
module called twice under the same parent path is one path with calls=2.

Tree: Pipeline -> Preprocessing (pre transforms) -> Model (the model's root call) -> its modules ->
Postprocessing (post transforms). Pipeline and the two groups are sums of their children.

Self time = total - direct children's totals, from the same perf_counter_ns clock, per call. Hook bookkeeping
outside a child's own timestamps lands in its parent's self time. The model root's self time (work in
Model.forward outside any submodule: the Detect decode, torch.cat, ...) is reported as an explicit
`Model/unattributed` row and the Model row's own self time is 0, so the layer rows' self times plus
unattributed add up exactly to the model total.

Input/output shapes and MACs of a path are taken on its first call and kept across reset(), so measured
passes after a warm-up carry no shape bookkeeping. The hooks assume calls come from one thread.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from utils.flops import flops_from_macs, module_macs

PIPELINE = "Pipeline"
PREPROCESSING = "Preprocessing"
POSTPROCESSING = "Postprocessing"
MODEL = "Model"
UNATTRIBUTED = "unattributed"

# Kinds of rows: pipeline and group rows are sums; model is the root call; layers sit under it.
KIND_PIPELINE = "pipeline"
KIND_GROUP = "group"
KIND_TRANSFORM = "transform"
KIND_MODEL = "model"
KIND_LAYER = "layer"
KIND_UNATTRIBUTED = "unattributed"

_NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class LayerRecord:
    """One call path: totals over all recorded calls, per-call durations, first-call shapes."""

    path: str
    name: str
    type: str
    kind: str
    depth: int
    parent: str
    calls: int
    total_ns: int
    self_ns: int
    call_total_ns: tuple[int, ...]
    call_self_ns: tuple[int, ...]
    params: int
    macs: int
    flops: int
    input_shapes: Any
    output_shapes: Any

    @property
    def total_ms(self) -> float:
        return self.total_ns / _NS_PER_MS

    @property
    def self_ms(self) -> float:
        return self.self_ns / _NS_PER_MS

    @property
    def child_ms(self) -> float:
        return (self.total_ns - self.self_ns) / _NS_PER_MS


@dataclass(frozen=True)
class TimingSnapshot:
    """Plain data (no torch objects): records in tree order, Pipeline first."""

    records: tuple[LayerRecord, ...]
    forwards: int
    warnings: tuple[str, ...]

    def _sum_ns(self, kind: str) -> int:
        return sum(record.total_ns for record in self.records if record.kind == kind)

    @property
    def model_total_ms(self) -> float:
        return self._sum_ns(KIND_MODEL) / _NS_PER_MS

    @property
    def unattributed_ms(self) -> float:
        return self._sum_ns(KIND_UNATTRIBUTED) / _NS_PER_MS

    @property
    def pipeline_total_ms(self) -> float:
        return self._sum_ns(KIND_PIPELINE) / _NS_PER_MS

    @property
    def macs_per_forward(self) -> float:
        if self.forwards == 0:
            return 0.0
        macs = sum(record.macs * record.calls for record in self.records if record.kind == KIND_LAYER)
        return macs / self.forwards

    @property
    def flops_per_forward(self) -> float:
        return flops_from_macs(self.macs_per_forward)


def shapes_of(value: Any) -> Any:
    """Tensor (or array) -> list of sizes; list/tuple -> list of those; dict -> dict; anything else None."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return [int(size) for size in shape]
    if isinstance(value, (list, tuple)):
        return [shapes_of(item) for item in value]
    if isinstance(value, dict):
        return {key: shapes_of(item) for key, item in value.items()}
    return None


class _Target:
    """A hooked object: its first qualified name and what its direct children are called."""

    __slots__ = ("obj", "canonical", "name_prefix", "local_name", "type_name", "params", "child_names",
                 "is_top", "home", "tree")

    def __init__(self, obj: Any, canonical: str, local_name: str, is_top: bool, home: _Node, tree: Any):
        self.obj = obj
        self.canonical = canonical
        # The model's modules are named as in named_modules (model.24.conv), with no "Model." in front.
        self.name_prefix = "" if canonical == MODEL else canonical + "."
        self.local_name = local_name
        self.is_top = is_top
        self.home = home
        self.tree = tree
        self.type_name = getattr(obj, "original_name", None) or type(obj).__name__
        self.child_names: dict[int, str] = {}
        self.params = 0
        if isinstance(obj, nn.Module):
            # named_children yields a child once, under its first attribute name.
            self.child_names = {id(child): name for name, child in obj.named_children()}
            opaque = isinstance(obj, torch.jit.ScriptModule)
            self.params = sum(p.numel() for p in obj.parameters(recurse=opaque))


class _Node:
    """One call path while recording; turned into a LayerRecord by snapshot()."""

    __slots__ = ("target_id", "path", "name", "type_name", "kind", "depth", "parent", "children",
                 "child_prefix", "params", "captured", "input_shapes", "output_shapes", "macs",
                 "total_ns", "self_ns")

    def __init__(self, target_id: int | None, path: str, name: str, type_name: str, kind: str,
                 parent: _Node | None, params: int = 0):
        self.target_id = target_id
        self.path = path
        self.name = name
        self.type_name = type_name
        self.kind = kind
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.children: list[_Node] = []
        # The model's own children start fresh so that paths match named_modules (model.24.conv).
        self.child_prefix = "" if path == MODEL else path + "."
        self.params = params
        self.captured = False
        self.input_shapes: Any = None
        self.output_shapes: Any = None
        self.macs = 0
        self.total_ns: list[int] = []
        self.self_ns: list[int] = []
        if parent is not None:
            parent.children.append(self)


def _relative_name(caller: _Target, target: _Target) -> str | None:
    """`target`'s qualified name below `caller` when it lies in caller's subtree (Model.forward calling
    self.model[i] directly names layer i `model.i`, not a detached call)."""
    if target.tree is not caller.tree or target.is_top or not target.canonical.startswith(caller.name_prefix):
        return None
    return target.canonical[len(caller.name_prefix):]


class HookedCalls:
    """Installs call brackets on a model and its transforms and resolves each call to a call-path node.

    Subclasses decide what a bracket does: `_before_call(target, args)` and
    `_after_call(target, args, output)`; the frames they push on `_stack` start with the call's node.
    Shared by ModelTiming and the profiler's record_function ranges so both name calls the same way.
    """

    def __init__(self, model: nn.Module, pre_transforms: Iterable[Any] = (),
                 post_transforms: Iterable[Any] = ()):
        self.model = model
        self.pre_transforms = list(pre_transforms)
        self.post_transforms = list(post_transforms)
        self.forwards = 0
        self.warnings: list[str] = []
        self._stack: list[list[Any]] = []
        self._targets: dict[int, _Target] = {}
        self._nodes: dict[tuple[int, int], _Node] = {}
        self._handles: list[Any] = []
        self._swapped: list[tuple[Any, type]] = []
        self._pipeline = _Node(None, PIPELINE, PIPELINE, PIPELINE, KIND_PIPELINE, None)
        self._pre_group = _Node(None, PREPROCESSING, PREPROCESSING, PREPROCESSING, KIND_GROUP, self._pipeline)
        self._post_group = _Node(None, POSTPROCESSING, POSTPROCESSING, POSTPROCESSING, KIND_GROUP,
                                 self._pipeline)

    def __enter__(self) -> HookedCalls:
        self._stack.clear()
        try:
            self._register_module_tree(self.model, MODEL, MODEL, self._pipeline)
            self._register_transforms(self.pre_transforms, self._pre_group)
            self._register_transforms(self.post_transforms, self._post_group)
        except BaseException:
            self._detach()
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._detach()

    def _detach(self) -> None:
        for handle in self._handles:
            handle.remove()
        for obj, original_class in self._swapped:
            obj.__class__ = original_class
        self._handles.clear()
        self._swapped.clear()
        self._targets.clear()
        self._stack.clear()

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        warnings.warn(message, stacklevel=4)

    def _register_transforms(self, transforms: Sequence[Any], group: _Node) -> None:
        taken: set[str] = set()
        for transform in transforms:
            base = type(transform).__name__
            name, copy = base, 1
            while name in taken:
                copy += 1
                name = f"{base}#{copy}"
            taken.add(name)
            path = f"{group.path}/{name}"
            if isinstance(transform, nn.Module):
                self._register_module_tree(transform, path, name, group)
            elif id(transform) not in self._targets:
                self._targets[id(transform)] = _Target(transform, path, name, True, group, transform)
                self._swap_call(transform)

    def _register_module_tree(self, root: nn.Module, root_path: str, root_name: str, home: _Node) -> None:
        if hasattr(root, "_orig_mod"):
            self._warn(f"{root_path} is a torch.compile'd module: hooks force graph breaks, so per-layer "
                       "times do not describe the compiled model; time its uncompiled twin instead")
        pending = [(root, root_path, root_name, True)]
        while pending:
            module, canonical, local_name, is_top = pending.pop()
            if id(module) in self._targets:
                continue
            self._targets[id(module)] = _Target(module, canonical, local_name, is_top, home, root)
            if isinstance(module, torch.jit.ScriptModule):
                self._warn(f"{canonical} ({type(module).__name__}) is a TorchScript (scripted or traced) "
                           "module: Python hooks cannot see inside it, so its per-layer rows are missing; "
                           "only its outer call is timed")
                self._attach_opaque(module, is_root=module is self.model)
                continue
            self._attach_hooks(module, is_root=module is self.model)
            prefix = self._targets[id(module)].name_prefix
            children = [(child, prefix + name, name, False) for name, child in module.named_children()]
            pending.extend(reversed(children))

    def _attach_hooks(self, module: nn.Module, is_root: bool) -> None:
        before = self._root_before_hook if is_root else self._before_call
        self._handles.append(module.register_forward_pre_hook(before))
        self._handles.append(module.register_forward_hook(self._after_call, always_call=True))

    def _attach_opaque(self, module: nn.Module, is_root: bool) -> None:
        try:
            self._attach_hooks(module, is_root)
        except RuntimeError:
            # Scripted modules refuse Python hooks; their Python-level __call__ can still be bracketed.
            self._swap_call(module)

    def _swap_call(self, obj: Any) -> None:
        original_class = type(obj)
        original_call = original_class.__call__
        hooked = self
        is_root = obj is self.model

        def bracketed_call(instance: Any, *args: Any, **kwargs: Any) -> Any:
            if is_root:
                hooked.forwards += 1
            hooked._before_call(instance, args)
            output = None
            try:
                output = original_call(instance, *args, **kwargs)
                return output
            finally:
                hooked._after_call(instance, args, output)

        try:
            # Empty __slots__ keeps the instance layout identical, which __class__ assignment requires.
            obj.__class__ = type(original_class.__name__, (original_class,), {
                "__call__": bracketed_call, "__slots__": (), "__module__": original_class.__module__})
        except TypeError as error:
            raise TypeError(f"cannot time {obj!r}: only nn.Modules and instances of Python classes with "
                            "__call__ can be bracketed; wrap plain functions in such an object") from error
        self._swapped.append((obj, original_class))

    def _root_before_hook(self, module: nn.Module, args: Any) -> None:
        self.forwards += 1
        self._before_call(module, args)

    def _node_for(self, target: Any) -> _Node:
        """The call-path node of a call of `target` starting now (the top of the stack is its parent)."""
        parent = self._stack[-1][0] if self._stack else None
        node = self._nodes.get((id(parent), id(target)))
        if node is None:
            node = self._new_node(parent, target)
        return node

    def _new_node(self, caller: _Node | None, target: Any) -> _Node:
        info = self._targets[id(target)]
        if caller is None:
            parent = info.home
            path = info.canonical if info.is_top else f"{parent.path}/{info.canonical}"
            name = info.local_name
        else:
            parent = caller
            caller_info = self._targets[caller.target_id]
            relative = caller_info.child_names.get(id(target)) or _relative_name(caller_info, info)
            if relative is not None:
                path, name = caller.child_prefix + relative, relative.rsplit(".", 1)[-1]
            else:
                path, name = f"{caller.path}/{info.canonical}", info.local_name
        if target is self.model:
            kind = KIND_MODEL
        elif parent.kind in (KIND_MODEL, KIND_LAYER):
            kind = KIND_LAYER
        else:
            kind = KIND_TRANSFORM
        node = _Node(id(target), path, name, info.type_name, kind, parent, info.params)
        self._nodes[(id(caller), id(target))] = node
        return node

    def _before_call(self, target: Any, args: Any) -> None:
        raise NotImplementedError

    def _after_call(self, target: Any, args: Any, output: Any) -> None:
        raise NotImplementedError

    def _pop_frame(self, target: Any) -> list[Any] | None:
        """The frame of `target`'s call; frames above it belong to calls that died without closing."""
        stack = self._stack
        while stack:
            frame = stack.pop()
            if frame[0].target_id == id(target):
                return frame
        return None


class ModelTiming(HookedCalls):
    """Context manager timing every module call of `model` and every transform call, per call path."""

    def _before_call(self, target: Any, args: Any) -> None:
        frame = [self._node_for(target), 0, 0]
        self._stack.append(frame)
        frame[1] = time.perf_counter_ns()

    def _after_call(self, target: Any, args: Any, output: Any) -> None:
        end_ns = time.perf_counter_ns()
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

    @staticmethod
    def _capture(node: _Node, target: Any, args: Any, output: Any) -> None:
        node.input_shapes = shapes_of(args)
        node.output_shapes = shapes_of(output)
        if isinstance(target, nn.Module):
            node.macs = module_macs(target, node.input_shapes, node.output_shapes)
        node.captured = True

    def reset(self) -> None:
        """Drop recorded calls and the forward count (after warm-up); shapes and MACs are kept."""
        for node in self._nodes.values():
            node.total_ns.clear()
            node.self_ns.clear()
        self.forwards = 0
        self._stack.clear()

    def snapshot(self) -> TimingSnapshot:
        return TimingSnapshot(tuple(self._collect(self._pipeline)), self.forwards, tuple(self.warnings))

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
        from utils.layer_reports import top_self_table

        return top_self_table(self.snapshot(), top)

    def summarize_tree(self) -> str:
        from utils.layer_reports import layer_tree_text

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
        if node.kind != KIND_MODEL:
            own = self._record(node, calls, total_ns, sum(node.self_ns), tuple(node.total_ns),
                               tuple(node.self_ns))
            return [own] + below
        unattributed = LayerRecord(
            path=f"{node.path}/{UNATTRIBUTED}", name=UNATTRIBUTED, type=UNATTRIBUTED, kind=KIND_UNATTRIBUTED,
            depth=node.depth + 1, parent=node.path, calls=calls, total_ns=sum(node.self_ns),
            self_ns=sum(node.self_ns), call_total_ns=tuple(node.self_ns), call_self_ns=tuple(node.self_ns),
            params=0, macs=0, flops=0, input_shapes=None, output_shapes=None)
        own = self._record(node, calls, total_ns, 0, tuple(node.total_ns), (0,) * calls)
        return [own] + below + [unattributed]

    @staticmethod
    def _record(node: _Node, calls: int, total_ns: int, self_ns: int, call_total_ns: tuple[int, ...],
                call_self_ns: tuple[int, ...]) -> LayerRecord:
        return LayerRecord(
            path=node.path, name=node.name, type=node.type_name, kind=node.kind, depth=node.depth,
            parent=node.parent.path if node.parent is not None else "", calls=calls, total_ns=total_ns,
            self_ns=self_ns, call_total_ns=call_total_ns, call_self_ns=call_self_ns, params=node.params,
            macs=node.macs, flops=flops_from_macs(node.macs), input_shapes=node.input_shapes,
            output_shapes=node.output_shapes)
