"""The settings every detector family states under names shared by all families, with its own defaults for each
architecture: how it is deployed (input size, normalisation, score cut, NMS IoU, detections kept), how its
accuracy pass evaluates, and how its forward is timed. Light (no torch): the config schema reads them.

A shared key left out of a config (null) takes the architecture's own default, so one key can have one name in
every family while RetinaNet cuts at 0.05 and SSDlite at 0.001.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping, Optional

from pydantic import BaseModel, Field

_ARCH_DEFAULT = "null: the architecture's own (see [its defaults](#defaults-of-each-architecture))"
NO_CAP = 0  # postprocess.max_det that keeps every detection (null already means the architecture's own)


def cap(max_det: int) -> Optional[int]:
    """A slice's end for `max_det` detections: None (all of them) for NO_CAP."""
    return None if max_det == NO_CAP else max_det


class ForwardTiming(str, Enum):
    """How the harness times a family's forward: in one piece (any runtime can run it, exported or not), or in
    parts hooked from outside (only a runtime that runs the torch modules themselves keeps the parts apart)."""

    WHOLE = "whole"
    PARTS = "parts"


@dataclass(frozen=True)
class Evaluation:
    """The protocol of a family's accuracy pass: the cut, NMS IoU and detections kept its own evaluation uses."""

    conf_thres: float
    iou_thres: float
    max_det: int
    # Every class above the cut per candidate (YOLOv7's test.py) or its best only; None where the family keeps
    # every class above the cut by construction (torchvision's detectors), so the key does not apply.
    multi_label: Optional[bool]
    source: str  # whose protocol, in words, for summary.json


@dataclass(frozen=True)
class ArchDefaults:
    """One architecture's defaults: every shared key of the preprocess and postprocess sections (and any of the
    family's own keys whose default depends on the architecture), its accuracy protocol, and the layers int8
    keeps in float unless the config names others; the keys of its family this architecture does not take
    (dotted, with why), and whether it can keep every detection (postprocess.max_det NO_CAP)."""

    preprocess: Mapping[str, Any]
    postprocess: Mapping[str, Any]
    evaluation: Evaluation
    keep_float: tuple[str, ...] = field(default_factory=tuple)
    inapplicable: Mapping[str, str] = field(default_factory=dict)
    keeps_all: bool = True


class SharedPreprocess(BaseModel):
    """The preprocess keys every family reads."""

    img_size: Optional[int] = Field(None, ge=32, description=(
        "the input size: YOLO's letterbox side, torchvision's shorter side (its fixed square side for SSD); "
        + _ARCH_DEFAULT))
    mean: Optional[list[float]] = Field(None, min_length=3, max_length=3, description=(
        "per-channel mean (R, G, B) subtracted from pixels scaled to [0, 1]; " + _ARCH_DEFAULT))
    std: Optional[list[float]] = Field(None, min_length=3, max_length=3, description=(
        "per-channel divisor (R, G, B) after the mean; " + _ARCH_DEFAULT))


class SharedPostprocess(BaseModel):
    """The postprocess keys every family reads."""

    conf_thres: Optional[float] = Field(None, ge=0.0, le=1.0, description=(
        "the deployed score cut: detections kept above it; " + _ARCH_DEFAULT))
    iou_thres: Optional[float] = Field(None, ge=0.0, le=1.0, description=("NMS IoU threshold; " + _ARCH_DEFAULT))
    max_det: Optional[int] = Field(None, ge=NO_CAP, description=(
        f"detections kept per image; {NO_CAP}: no cap, as YOLOX's own inference keeps every box NMS leaves (YOLO and "
        "files; torchvision's detectors always cap); " + _ARCH_DEFAULT))


SHARED_PREPROCESS = tuple(SharedPreprocess.model_fields)
SHARED_POSTPROCESS = tuple(SharedPostprocess.model_fields)
EVALUATION_KEYS = (*SHARED_POSTPROCESS, "multi_label")  # what an accuracy protocol sets (Evaluation's settings)
