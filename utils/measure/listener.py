"""The protocol every recorder that follows the pipeline's steps implements (energy, memory, trace ranges)."""
from __future__ import annotations

from typing import Protocol


class StepListener(Protocol):
    def step_started(self, name: str) -> None: ...

    def step_ended(self, name: str) -> None: ...
