"""The work of a timed step called through a function named after the step (`detbench_step_forward`), so that
a sampler's stacks say which step they were taken in. One extra Python frame per step, a fraction of a
microsecond; the pipeline's own code is untouched.
"""
from __future__ import annotations

import types
from typing import Any, Callable

from utils.record.steps import STEP_FRAME_PREFIX

_frames: dict[str, Callable[..., Any]] = {}


def _step_frame(work: Callable[..., Any], *args: Any) -> Any:
    return work(*args)


def in_step_frame(step: str, work: Callable[..., Any], *args: Any) -> Any:
    """work(*args), called from a frame named STEP_FRAME_PREFIX + step."""
    frame = _frames.get(step)
    if frame is None:
        name = STEP_FRAME_PREFIX + step
        code = _step_frame.__code__.replace(co_name=name, co_qualname=name)
        frame = _frames[step] = types.FunctionType(code, _step_frame.__globals__, name)
    return frame(work, *args)
