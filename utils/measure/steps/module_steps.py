"""ModuleSteps: calls of chosen modules timed as steps of a StepTimer, from outside, with forward hooks.

A pipeline names parts of its network (R-CNN's backbone, rpn, roi_heads); each call of one becomes a step
nested in the step that is open when it runs (forward), so steps_timer.csv, the trace and the memory and
energy recorders see them like any other step. The step opens before, and closes after, any other hook on
the same module (per-layer timing, profiler ranges), so those nest inside it.
"""
from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any, Sequence

from torch import nn

from utils.measure.steps.step_timer import StepTimer


class ModuleSteps:
    def __init__(self, timer: StepTimer, parts: Sequence[tuple[str, nn.Module]]):
        self.timer = timer
        self.parts = tuple(parts)
        self._handles: list[Any] = []
        self._open: list[AbstractContextManager] = []

    def __enter__(self) -> ModuleSteps:
        for name, module in self.parts:
            self._handles.append(module.register_forward_pre_hook(self._opener(name), prepend=True))
            self._handles.append(module.register_forward_hook(self._close, always_call=True))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        # A part cut short by a stop: its step ends unrecorded, as the timer does for a failed step.
        while self._open:
            self._open.pop().__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)

    def _opener(self, name: str):
        def open_step(module: nn.Module, args: Any) -> None:
            step = self.timer.step(name)
            step.__enter__()
            self._open.append(step)
        return open_step

    def _close(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._open:
            # torch runs an always_call hook inside its exception handler when the forward raised: a failed
            # part is no measurement.
            self._open.pop().__exit__(*sys.exc_info())
