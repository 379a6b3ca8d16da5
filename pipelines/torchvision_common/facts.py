"""What every torchvision detector family shares, light enough for the config schema (no torch): the builders'
own defaults as data, how they become a family's defaults under the shared names, and the preprocess key they
all read beside the shared ones. A test checks every row against torchvision's builder."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from pydantic import BaseModel, Field

from pipelines.runtimes import registry as runtimes
from pipelines.settings import ArchDefaults, Evaluation

IMAGENET_MEAN = (0.485, 0.456, 0.406)  # the normalisation of most torchvision detectors: RGB in [0, 1]
IMAGENET_STD = (0.229, 0.224, 0.225)
# torchvision's builders state evaluation cuts (0.001-0.2), at which a photo holds hundreds of boxes; detbench
# deploys them at a cut a user would show, which the label-free verdict also takes as its stand-in labels.
DEPLOYED_CONF_THRES = 0.5
EVALUATION_SOURCE = "torchvision's COCO evaluation of the builder: its own score cut, NMS IoU and detections kept"


@dataclass(frozen=True)
class Builder:
    """A torchvision builder's test-time defaults, as its model object holds them after building."""

    min_size: int
    max_size: int
    score_thresh: float
    nms_thresh: float
    detections_per_img: int
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    fixed_size: bool = False  # SSD: resized to a fixed square min_size, aspect not kept
    size_divisible: int = 32  # the batch is padded to a multiple of it
    topk_candidates: Optional[int] = None  # single-stage: candidates kept per level before NMS
    smallest_input: int = 32  # the smallest input side its layers can take (SSD300's last 3x3 convs pad nothing)

    def defaults(self, keep_float: tuple[str, ...] = ()) -> ArchDefaults:
        preprocess = {"img_size": self.min_size, "mean": list(self.mean), "std": list(self.std),
                      "max_size": self.max_size}
        postprocess = {"conf_thres": DEPLOYED_CONF_THRES, "iou_thres": self.nms_thresh,
                       "max_det": self.detections_per_img}
        if self.topk_candidates is not None:
            postprocess["topk_candidates"] = self.topk_candidates
        evaluation = Evaluation(self.score_thresh, self.nms_thresh, self.detections_per_img, None, EVALUATION_SOURCE)
        # torchvision's heads always keep at most detections_per_img.
        return ArchDefaults(preprocess, postprocess, evaluation, keep_float, keeps_all=False)


class Preprocess(BaseModel):
    """The preprocess key every torchvision detector reads beside the shared ones."""

    max_size: Optional[int] = Field(None, ge=32, description=(
        "torchvision: the longer side is kept at most this (the shorter is `img_size`); not for SSD, whose input "
        "is a fixed square; null: the architecture's own"))


def largest_input_area(builder: Builder, preprocess) -> int:
    """The most pixels one image's input can have: a fixed square, or the shorter side at img_size unless the
    longer would pass max_size (at most img_size x max_size)."""
    if builder.fixed_size:
        return preprocess.img_size ** 2
    return min(preprocess.img_size, preprocess.max_size) * preprocess.max_size


def settings_problem(builder: Builder, preprocess) -> Optional[str]:
    if preprocess.img_size < builder.smallest_input:
        return (f"preprocess.img_size {preprocess.img_size} is below the smallest input this architecture's layers "
                f"can take ({builder.smallest_input}); set preprocess.img_size to at least {builder.smallest_input}")
    if builder.fixed_size and preprocess.max_size != builder.max_size:
        return ("preprocess.max_size does not apply to this architecture: its input is a fixed square of "
                "preprocess.img_size; remove preprocess.max_size")
    if any(value <= 0 for value in preprocess.std):
        return f"preprocess.std {preprocess.std} must be positive: every pixel is divided by it"
    return None


# What every torchvision family states the same way (its facts.py imports these as its own).

def unsupported_runtime(runtime, source: str = "") -> Optional[str]:
    return None


def reference_backend(source: str) -> str:
    return runtimes.REFERENCE.name


def input_size(preprocess) -> int:
    return preprocess.img_size


def over_builders(builders: Mapping[str, Builder]) -> tuple[Callable, Callable, Callable]:
    """A family's settings_problem(arch, preprocess, batch_size), smallest_input(arch) and
    largest_input_area(arch, preprocess), over its own builders."""

    def family_settings_problem(arch: str, preprocess, batch_size: int) -> Optional[str]:
        return settings_problem(builders[arch], preprocess)

    def family_smallest_input(arch: str) -> int:
        return builders[arch].smallest_input

    def family_largest_input_area(arch: str, preprocess) -> int:
        return largest_input_area(builders[arch], preprocess)

    return family_settings_problem, family_smallest_input, family_largest_input_area
