"""What every detector family's pipeline offers the harness, and what it returns.

A pipeline is a chain of stages: each leaf stage takes the previous stage's output (the first takes the list
of decoded BGR images) and the last returns one `Detections` per image. A stage may name a parent group
(YOLO's `nms` and `scale_boxes` sit inside `postprocess`), and the harness times leaves and groups from
outside. The pipeline never knows it is measured.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol, Sequence

import numpy as np
import torch
from torch import nn


FORWARD_STAGE = "forward"  # every pipeline's stage that runs the network is named this: overheads compare it


@dataclass(frozen=True)
class Detections:
    """One image's detections in its original pixels, as torchvision's detection models return them."""

    boxes: torch.Tensor  # (N, 4) float, x1 y1 x2 y2
    scores: torch.Tensor  # (N,) float
    labels: torch.Tensor  # (N,) int64 class ids
    masks: Optional[torch.Tensor] = None  # (N, H, W) in the original image's pixels, for families that segment

    def __len__(self) -> int:
        return int(self.boxes.shape[0])


@dataclass(frozen=True)
class GraphTail:
    """The operator a file's graph ends in that a runtime may have no kernel for, where the family can do its work
    (a TFLite SSD's TFLite_Detection_PostProcess): a runtime lacking it (its spec's `lacks_operators`) runs the
    graph up to `inputs`, the tensors the graph computes for it, and returns those in that order."""

    operator: str
    inputs: tuple[str, ...]


@dataclass
class LoadedNetwork:
    """A detector network as its family built it: unfused, float32, with where its weights came from."""

    module: Optional[nn.Module]  # None where the network is a file the runtimes read themselves
    class_names: list[str]
    weights: str  # e.g. "random (seed 0)" or "checkpoint yolov7.pt (ema, float16)"
    random_weights: bool
    cache_key: str  # what determines the network's weights and structure, for caches of exported models
    fuse: Optional[Callable[[nn.Module], Any]] = None  # the family's inference-time simplification, if any
    # Its float input is each RGB pixel value over this (YOLO: 255), so a runtime may take the uint8 pixels and
    # convert them itself; None where the input is not plain scaled pixels.
    pixel_scale: Optional[float] = None
    arch: str = ""  # the model.arch it was built as (a file's path), for families whose pipeline depends on it
    file: Optional[Path] = None  # the exported file that is the network, which runtimes read instead of exporting
    reading: Any = None  # what the family read of such a file to build its pipeline (its output layout)
    description: dict[str, Any] = field(default_factory=dict)  # what was read of it, for summary.json
    # Its image input is (batch, height, width, 3) (a TFLite file's): batches and examples are handed over so.
    channels_last: bool = False
    tail: Optional[GraphTail] = None


@dataclass(frozen=True)
class Stage:
    name: str
    run: Callable[[Any], Any]
    parent: Optional[str] = None


@dataclass(frozen=True)
class LayerTimingTargets:
    """What per-layer timing may hook: the network (None when the runtime runs no torch module) and the
    pre- and post-processing transforms, each an nn.Module or an object with __call__."""

    model: Optional[nn.Module]
    pre_transforms: tuple[Any, ...] = field(default_factory=tuple)
    post_transforms: tuple[Any, ...] = field(default_factory=tuple)
    # Call paths of model modules whose own work outside their children gets an explicit unattributed row.
    functional_paths: tuple[str, ...] = field(default_factory=tuple)


class DetectionPipeline(ABC):
    family: str
    class_names: list[str]
    score_threshold: float  # the configured score detections are kept above (the agreement check's default)
    # What a batch of more than one image changes in the detections, for summary.json; None: nothing.
    batching_note: Optional[str] = None

    @abstractmethod
    def stages(self) -> tuple[Stage, ...]:
        """Leaf stages in the order they run."""

    @abstractmethod
    def layer_timing_targets(self) -> LayerTimingTargets: ...

    # What agreement checks between two runtimes compare: the forward stage's raw output, a score per
    # candidate to rank them by, and detections at a threshold chosen to keep the top candidates.
    @abstractmethod
    def raw_output(self, forwarded: Any) -> torch.Tensor:
        """(B, candidates, values) from the forward stage's output."""

    @abstractmethod
    def candidate_scores(self, raw: torch.Tensor) -> torch.Tensor:
        """(B, candidates) confidence of each raw candidate."""

    @abstractmethod
    def postprocess_at(self, forwarded: Any, conf_thres: float) -> list[Detections]:
        """The stages after forward, at another score threshold."""

    @abstractmethod
    def input_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        """The shape of the network input a batch of images of these upright (height, width) sizes becomes,
        from the sizes alone (no pixel is needed): the harness warms up every shape before timing."""

    def recipe(self) -> Optional[dict[str, Any]]:
        """The preprocessing and decode the pipeline applies and on what ground, for summary.json `recipe`
        (utils/record/sections.py RecipeEntry), where a family chooses among recipes (a file's); None by default."""
        return None

    def doubts(self) -> list[str]:
        """What the pipeline's own outputs so far say may be wrong with how it reads the network (a file's layout
        taken by assumption that decoded nothing plausible), for the run's warnings; none by default."""
        return []

    def forward_parts(self) -> tuple[tuple[str, nn.Module], ...]:
        """(step name, module) of the parts of the network the harness may time from outside as steps inside
        the forward stage, in running order; none by default."""
        return ()

    def step_order(self) -> tuple[str, ...]:
        """Stage and group names in running order, groups before their first child, forward parts after it."""
        names: list[str] = []
        for stage in self.stages():
            if stage.parent is not None and stage.parent not in names:
                names.append(stage.parent)
            names.append(stage.name)
            if stage.name == FORWARD_STAGE:
                names.extend(name for name, _ in self.forward_parts())
        return tuple(names)

    def __call__(self, images: list[np.ndarray]) -> list[Detections]:
        value: Any = images
        for stage in self.stages():
            value = stage.run(value)
        return value


class FamilyFacts(Protocol):
    """A family's facts module (pipelines/<family>/facts.py): what it states about itself, light enough for the
    config schema to ask (it imports no torch)."""

    NAME: str
    ARCHS: tuple[str, ...]
    ARCH_FILES: tuple[str, ...]  # suffixes of definition files model.arch may name instead; () for none
    ARCH_FILE_TEXT: str  # how a config error names such a file
    STRIDE: int  # the largest stride: the input's sides are multiples of it
    SIZE_KEYS: tuple[str, ...]  # the preprocess keys that set the input size, in the memory check's advice
    OUTPUT_LAYOUT: str  # what the forward's raw output holds
    EVALUATION_PREPROCESS: Optional[str]  # its official mAP evaluation's preprocessing where it differs from deployment
    Preprocess: type  # pydantic model: the preprocess keys it reads, with defaults (the default input size)
    Postprocess: type  # pydantic model: what its postprocess offers

    def accepts(self, arch: str) -> bool: ...

    def unsupported_runtime(self, runtime: Any, source: str = "") -> Optional[str]:
        """Why the config's runtime section cannot run this family's `source` (model.arch, or model.file), or None
        when it can."""

    def reference_backend(self, source: str) -> str:
        """The runtime whose fp32 forward the verdicts compare with: torch, or what reads the file as exported."""

    FORWARD_TIMING: Any  # pipelines.settings.ForwardTiming: in one piece, or in parts only torch modules keep apart

    def defaults(self, arch: str, model: Any = None) -> Any:
        """pipelines.settings.ArchDefaults: the architecture's defaults under the shared names, its accuracy
        protocol and the layers int8 keeps in float. `model`: the config's model section, whose family keys (a
        file's model.head) may decide them; None: every such key at its default."""

    def settings_problem(self, arch: str, preprocess: Any, batch_size: int) -> Optional[str]:
        """What the resolved preprocess section and dataset.batch_size ask that this architecture cannot do, for a
        config error; None if nothing."""

    def smallest_input(self, arch: str) -> int:
        """The smallest input side the architecture's layers can take."""

    def input_size(self, preprocess: Any) -> int:
        """The input size a run of this family is labelled with (summary.json img_size)."""

    def largest_input_area(self, arch: str, preprocess: Any) -> int:
        """The most pixels one image's input tensor can have under the config (for the memory estimate)."""


class DetectorFamily(FamilyFacts, Protocol):
    """A family module (pipelines/<family>/family.py) offers its facts and these."""

    def memory_probe(self, network: LoadedNetwork, postprocess: Any) -> Optional[tuple[nn.Module, int]]:
        """The part of the network whose activations grow with the input area (run at small sizes to measure
        them), and the bytes per image of the rest, which do not; None where there is no torch module to probe."""

    def load_network(self, arch: str, weights: Optional[str], seed: int, model: Any = None) -> LoadedNetwork:
        """`model`: the config's model section, as for defaults()."""

    def example_input(self, preprocess: Any) -> torch.Tensor:
        """One input batch of the shape the config's preprocess section produces."""

    def build_pipeline(self, network: LoadedNetwork, forward: Any, preprocess: Any, postprocess: Any,
                       evaluation: bool = False) -> DetectionPipeline:
        """`evaluation`: preprocess as the family's official mAP evaluation does, where that differs from how
        it is deployed (benchmark.accuracy.preprocess)."""
