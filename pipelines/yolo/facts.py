"""What the YOLO family states about itself, light enough for the config schema (no torch): the
architectures it builds, its input geometry, the preprocess and postprocess keys it reads, its output."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field, field_validator

from pipelines.boxes.keys import LetterboxKeys, NmsKeys
from pipelines.runtimes import registry as runtimes
from pipelines.settings import ArchDefaults, Evaluation, ForwardTiming

NAME = "yolo"
ARCHS = ("yolov7", "yolov7-tiny")  # models/yolo.py's builtin definitions (a test keeps the two equal)
ARCH_FILES = (".yaml", ".yml")  # or a model-definition file in the YOLOv7 cfg format
ARCH_FILE_TEXT = "a path to a YOLOv7-format model-definition .yaml file"
STRIDE = 32  # the largest stride of its heads: an input side is a multiple of it
SIZE_KEYS = ("img_size",)  # the preprocess keys that set the input size, in the memory check's advice
# The forward's raw output, what agreement checks compare and NMS takes.
OUTPUT_LAYOUT = "(batch, candidates, 5 + classes): box centre x, y, width, height in input pixels, objectness, " \
                "class scores"
# How its official mAP evaluation prepares images, where that is not how it deploys them (build_pipeline's
# `evaluation`); None where it is.
EVALUATION_PREPROCESS = ("YOLOv7 test.py's letterbox: the long side resized to img_size (by pixel area when "
                         "shrinking), each batch centred in the rectangle of its aspect ratios plus half a stride")
FORWARD_TIMING = ForwardTiming.WHOLE
# YOLOv7's own: pixels over 255, no mean or std; its deployment defaults (detect.py) and its mAP protocol (test.py).
PIXELS_OVER_255 = {"img_size": 640, "mean": [0.0, 0.0, 0.0], "std": [1.0, 1.0, 1.0]}
DEFAULTS = ArchDefaults(
    preprocess={**PIXELS_OVER_255, "pad_value": 114},
    postprocess={"conf_thres": 0.25, "iou_thres": 0.45, "max_det": 300, "agnostic": False},
    evaluation=Evaluation(0.001, 0.65, 300, True, "YOLOv7's test.py"),
    # Detect's decode ends in one Concat of pixel boxes beside 0-1 scores, which no single int8 scale holds.
    keep_float=("Detect",),
)


class Preprocess(LetterboxKeys):
    """Letterbox to a square of img_size (rect: the smallest stride-multiple rectangle per image)."""

    rect: bool = Field(False, description=(
        "yolo: false: square img_size letterbox; true: minimal stride-32 rectangle per image"))


class Postprocess(NmsKeys):
    """NMS over the raw candidates (its score is objectness x class): a class filter, class-agnostic or not."""

    classes: Optional[list[int]] = Field(None, description="yolo: keep only these class ids; null: all")
    multi_label: bool = Field(False, description=(
        "yolo: every class above conf_thres per box, not only the best (as YOLOv7's test.py for mAP)"))

    @field_validator("classes")
    @classmethod
    def _non_negative(cls, value: Optional[list[int]]) -> Optional[list[int]]:
        if value is not None and any(c < 0 for c in value):
            raise ValueError("class ids must be >= 0")
        return value


def accepts(arch: str) -> bool:
    """The builtin YOLOv7 definitions, or a model-definition file in the YOLOv7 cfg format."""
    return arch in ARCHS or Path(arch).suffix in ARCH_FILES


def defaults(arch: str, model: Any = None) -> ArchDefaults:
    return DEFAULTS


def unsupported_runtime(runtime, source: str = "") -> Optional[str]:
    return None


def reference_backend(source: str) -> str:
    return runtimes.REFERENCE.name


def settings_problem(arch: str, preprocess, batch_size: int) -> Optional[str]:
    if preprocess.img_size % STRIDE:
        return (f"preprocess.img_size {preprocess.img_size} must be a multiple of {STRIDE} (the model's largest "
                f"stride), e.g. {max(STRIDE, preprocess.img_size // STRIDE * STRIDE)}")
    for key in ("mean", "std"):
        if getattr(preprocess, key) != PIXELS_OVER_255[key]:
            return (f"preprocess.{key} does not apply to model.arch {arch}: YOLOv7 takes RGB pixels over 255, "
                    f"with no mean or std; remove preprocess.{key}")
    return None


def smallest_input(arch: str) -> int:
    return STRIDE


def input_size(preprocess) -> int:
    return preprocess.img_size


def largest_input_area(arch: str, preprocess) -> int:
    # Deployed, rect letterboxing only ever makes it smaller than img_size squared; the accuracy pass's official
    # letterbox (test.py's) pads each side by up to a stride more (letterbox.evaluation_shape).
    return (preprocess.img_size + STRIDE) ** 2
