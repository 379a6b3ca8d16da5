"""Steps and layers as ITT tasks, so that VTune (`vtune -collect hotspots -- python benchmark.py ...`) shows
detbench's steps and layers on its timeline. torch's ITT binding (torch.profiler.itt) does the calls; without
a collector attached they cost a function call and record nothing.

A StepTimer listener opens a task per step; as a context manager it also hooks every module of the model,
opening a task named by its call path before the module runs and closing it after. Tasks must nest: a module
whose forward raised never runs its post-hook, so its task and every one opened inside it are closed when
the step around them ends, and all are closed when the hooks come off.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import torch.profiler.itt as itt
from torch import nn


def itt_status() -> dict[str, Any]:
    available = itt.is_available()
    return {"available": available,
            "api": "torch.profiler.itt (range_push / range_pop)",
            "reason": None if available else "this torch build has no ITT support (USE_ITT off)"}


class IttTasks:
    """StepListener and context manager; `push`/`pop` default to torch's ITT binding."""

    def __init__(self, model: Optional[nn.Module], push: Callable[[str], Any] = itt.range_push,
                 pop: Callable[[], Any] = itt.range_pop):
        self.model = model
        self.push, self.pop = push, pop
        self.depth = 0
        self.step_depths: list[int] = []
        self.tasks = 0
        self._handles: list[Any] = []

    def _open(self, name: str) -> None:
        self.push(name)
        self.depth += 1
        self.tasks += 1

    def _close_to(self, depth: int) -> None:
        while self.depth > depth:
            self.pop()
            self.depth -= 1

    def step_started(self, name: str) -> None:
        self.step_depths.append(self.depth)
        self._open(name)

    def step_ended(self, name: str) -> None:
        self._close_to(self.step_depths.pop() if self.step_depths else 0)

    def __enter__(self) -> "IttTasks":
        if self.model is not None:
            for path, module in self.model.named_modules():
                self._handles.append(module.register_forward_pre_hook(self._layer_opened(path or "Model")))
                self._handles.append(module.register_forward_hook(self._layer_closed))
        return self

    def _layer_opened(self, path: str) -> Callable[..., None]:
        def opened(*_: Any) -> None:
            self._open(path)
        return opened

    def _layer_closed(self, *_: Any) -> None:
        if self.depth > (self.step_depths[-1] + 1 if self.step_depths else 0):
            self.pop()
            self.depth -= 1

    def __exit__(self, *exc_info: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._close_to(0)
