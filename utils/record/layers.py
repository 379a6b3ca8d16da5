"""Per-layer timing as plain data: one LayerRecord per call path, gathered in a TimingSnapshot; and the profiled
batch's memory and operators per call path, a LayerProfile. utils/measure/layers/ makes them, as
utils/measure/steps/ makes the StepRecords of utils/record/steps.py.

Rows come in tree order: Pipeline -> Preprocessing -> Model -> its modules (and an explicit unattributed
remainder) -> Postprocessing. Pipeline and group rows are sums of their children.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
MODEL_FORWARD_KINDS = (KIND_LAYER, KIND_UNATTRIBUTED)  # what adds up to the model's forward time
SUM_KINDS = (KIND_PIPELINE, KIND_GROUP, KIND_MODEL)

NS_PER_MS = 1_000_000
SOURCE_TORCH_HOOKS = "torch forward hooks"


def flops_from_macs(macs: int) -> int:
    """FLOPs = 2 x MACs: one multiply plus one add each (utils/measure/layers/flops.py counts the MACs)."""
    return 2 * macs


@dataclass(frozen=True)
class LayerRecord:
    """One call path: totals over all recorded calls, per-call durations, first-call shapes.

    `macs_total` sums every call's MACs from the shapes that call really saw, so a batch of another size or a
    rect image of another shape counts what it cost."""

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
    macs_total: int
    input_shapes: Any
    output_shapes: Any

    @property
    def total_ms(self) -> float:
        return self.total_ns / NS_PER_MS

    @property
    def self_ms(self) -> float:
        return self.self_ns / NS_PER_MS

    @property
    def child_ms(self) -> float:
        return (self.total_ns - self.self_ns) / NS_PER_MS

    @property
    def macs(self) -> float:
        """Mean MACs per call."""
        return self.macs_total / self.calls if self.calls else 0.0

    @property
    def flops(self) -> float:
        return flops_from_macs(self.macs)

    @property
    def flops_total(self) -> int:
        return flops_from_macs(self.macs_total)


@dataclass(frozen=True)
class TimingSnapshot:
    """Plain data (no torch objects): records in tree order, Pipeline first."""

    records: tuple[LayerRecord, ...]
    forwards: int
    images: int
    warnings: tuple[str, ...]

    def _sum_ns(self, kind: str) -> int:
        return sum(record.total_ns for record in self.records if record.kind == kind)

    @property
    def model_total_ms(self) -> float:
        return self._sum_ns(KIND_MODEL) / NS_PER_MS

    @property
    def unattributed_ms(self) -> float:
        return self._sum_ns(KIND_UNATTRIBUTED) / NS_PER_MS

    @property
    def pipeline_total_ms(self) -> float:
        return self._sum_ns(KIND_PIPELINE) / NS_PER_MS

    @property
    def macs_total(self) -> int:
        return sum(record.macs_total for record in self.records if record.kind == KIND_LAYER)

    @property
    def macs_per_forward(self) -> float:
        return self.macs_total / self.forwards if self.forwards else 0.0

    @property
    def flops_per_forward(self) -> float:
        return flops_from_macs(self.macs_per_forward)

    @property
    def flops_per_image(self) -> float | None:
        """Independent of batching: the figure that compares runs at different batch sizes."""
        return flops_from_macs(self.macs_total) / self.images if self.images else None


@dataclass(frozen=True)
class PathMemory:
    """Memory of one call path over the profiled batch; `output_bytes` is the mean per call (None: not seen).
    What each figure counts: utils/measure/layers/layer_profile.py."""

    path: str
    calls: int
    alloc_self_bytes: int
    alloc_total_bytes: int
    net_self_bytes: int
    net_total_bytes: int
    output_bytes: float | None


@dataclass(frozen=True)
class PathOp:
    """One operator as run directly under one call path: its calls, self and total time, first input shapes."""

    path: str
    op: str
    calls: int
    self_ns: int
    total_ns: int
    input_shapes: str


@dataclass(frozen=True)
class LayerProfile:
    """Per call path, from the profiled batch: memory (in first-call order) and operators."""

    memory: tuple[PathMemory, ...]
    ops: tuple[PathOp, ...]

    def memory_by_path(self) -> dict[str, PathMemory]:
        return {row.path: row for row in self.memory}
