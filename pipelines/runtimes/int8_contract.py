"""What accuracy-aware int8 (int8_repair.py) asks of each side: a runtime supplies a `QuantizedGraph` (its
quantized model with operations fed float again, pipelines/runtimes/<name>/reverting.py), the harness an
`AccuracyControl` (the judge on the images that choose, utils/checks/int8/selection.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol, Sequence

import numpy as np

# A network input (the image's array, or for a graph with further inputs the array and those inputs by name) ->
# the model's raw output(s).
RawForward = Callable[[Any], Any]
# What the search aims under, as a share of the budget: the drop it reads is a point estimate over few images,
# and the run's verdict then needs the drop's whole interval under the budget.
TARGET_SHARE = 0.5


def named_inputs(value: Any, image_name: str) -> dict[str, np.ndarray]:
    """One network input as the graph's inputs by name."""
    if isinstance(value, tuple):
        image, extra = value
        return {image_name: image, **extra}
    return {image_name: value}


class QuantizedGraph(Protocol):
    def operations(self) -> list[str]:
        """Names of the operations with a quantizer in front of them, in graph order."""

    def reverted(self, names: Sequence[str]) -> Any:
        """A copy of the quantized model with these operations fed float."""

    def forward(self, model: Any) -> RawForward:
        """A forward of this model (the quantized one when `model` is None; the float one for FLOAT)."""

    def save(self, model: Any, target: Any) -> None:
        """Writes the model whole to `target` (the runtime's file format)."""


FLOAT = "float"  # QuantizedGraph.forward's name for the float model


@dataclass(frozen=True)
class AccuracyControl:
    """From the harness. `drop(forward, first)`: the drop of that forward's detections from the reference's on
    the selection images (the first `first` of them; all when None), at the figure `figure`; None where it
    cannot be read. `reference(forward)` is called once, first, with the float model's forward. `inputs`: the
    selection images as network inputs, for timing."""

    reference: Callable[[RawForward], None]
    drop: Callable[[RawForward, Optional[int]], Optional[float]]
    inputs: Callable[[], list[np.ndarray]]
    budget: float
    images: int
    figure: str
    digest: str  # of the budget, the judge's settings, the selection images and the CPU's instruction sets
    ranking_images: int = 8
    evaluations: int = 80  # the most models one ranking compiles

    @property
    def target(self) -> float:
        return self.budget * TARGET_SHARE
