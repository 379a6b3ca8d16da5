"""HookedCalls: brackets every call of a model's modules and of its pipeline transforms, from outside.

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
module called twice under the same parent path is one path with calls=2. The hooks assume calls come from
one thread.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from utils.record.layers import (KIND_GROUP, KIND_LAYER, KIND_MODEL, KIND_PIPELINE, KIND_TRANSFORM, MODEL,
                                 PIPELINE, POSTPROCESSING, PREPROCESSING)

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
                 "child_prefix", "params", "captured", "input_shapes", "output_shapes", "mac_rule", "macs_total",
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
        self.mac_rule: tuple[str, int] | None = None
        self.macs_total = 0
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
        self.images = 0
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
                hooked._count_forward(args)
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

    def _count_forward(self, args: Any) -> None:
        self.forwards += 1
        batch = args[0] if args else None
        self.images += int(batch.shape[0]) if getattr(batch, "ndim", 0) >= 1 else 1

    def _root_before_hook(self, module: nn.Module, args: Any) -> None:
        self._count_forward(args)
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
