"""Which frames a source hands on, decided from each frame's index and timestamp alone, so a file's frames can
be chosen before decoding (from its packets' timestamps) and a live stream's as they come, by the same rule."""
from __future__ import annotations

import math
from typing import Optional, Sequence

from datasets.sources.settings import FrameSelection

# A timestamp that lands on a slot's edge but for rounding (0.1 * 3 = 0.30000000000000004) counts as on it.
_EDGE = 1e-6


class FrameSelector:
    """Keeps frame `index` when its index falls on the stride, or, for a target fps, when its timestamp opens a
    new 1/fps slot counted from the first frame's: the first frame of each slot is kept. A frame without a
    timestamp is kept under fps selection (no rule can place it)."""

    def __init__(self, selection: FrameSelection):
        self.selection = selection
        self._origin: Optional[float] = None
        self._last_slot: Optional[int] = None

    def keep(self, index: int, pts_s: Optional[float]) -> bool:
        if self.selection.fps is None:
            return index % self.selection.stride == 0
        if pts_s is None:
            return True
        if self._origin is None:
            self._origin = pts_s
        slot = math.floor((pts_s - self._origin) * self.selection.fps + _EDGE)
        if self._last_slot is not None and slot <= self._last_slot:
            return False
        self._last_slot = slot
        return True


def selected_indices(timestamps: Sequence[Optional[float]], selection: FrameSelection) -> list[int]:
    """The indices kept of frames whose timestamps are `timestamps`, in presentation order."""
    selector = FrameSelector(selection)
    return [index for index, pts_s in enumerate(timestamps) if selector.keep(index, pts_s)]
