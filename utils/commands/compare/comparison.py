"""What one comparison of two runs holds, section by section: the rows the console report, compare.csv and
compare.html are made of."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class Comparison:
    """The environment fields that differ (`same`: how many do not), the steps, layer types and layers (B against
    A), the accuracy pass's figures and LoadGen's scenario figures (empty where neither run has them)."""

    environment: list[dict]
    same: int
    steps: list[dict]
    layer_types: list[dict]
    layers: list[dict]
    accuracy: Sequence[dict] = ()
    scenario: Sequence[dict] = ()
