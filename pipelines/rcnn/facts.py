"""What the R-CNN family (torchvision's two-stage detectors) states about itself, light enough for the config
schema (no torch): the architectures it builds with their builders' defaults, its input geometry, its own
postprocess keys, its output, and that its forward is timed in parts."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from pipelines.settings import ArchDefaults, ForwardTiming
from pipelines.torchvision_common import facts as torchvision
from pipelines.torchvision_common.facts import (Builder, input_size, reference_backend,  # noqa: F401
                                               unsupported_runtime)

NAME = "rcnn"
_TWO_STAGE = Builder(min_size=800, max_size=1333, score_thresh=0.05, nms_thresh=0.5, detections_per_img=100)
BUILDERS = {arch: _TWO_STAGE for arch in (
    "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
    "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2")}
ARCHS = tuple(BUILDERS)
ARCH_FILES: tuple[str, ...] = ()  # no definition files: torchvision's builders only
ARCH_FILE_TEXT = ""
STRIDE = 32  # the FPN's coarsest level; the transform pads the batch to a multiple of it
SIZE_KEYS = ("img_size", "max_size")  # the preprocess keys that set the input size, in the memory check's advice
# The forward's raw output, per image as torchvision's roi_heads return it.
OUTPUT_LAYOUT = "per image: boxes (N, 4) x1 y1 x2 y2 in input pixels, labels (N,), scores (N,), and masks " \
                "(N, 1, H, W) for Mask R-CNN"
# torchvision evaluates its COCO mAP through the transform it deploys.
EVALUATION_PREPROCESS = None
# backbone, rpn and roi_heads are timed apart from outside: only a runtime that keeps the modules can.
FORWARD_TIMING = ForwardTiming.PARTS

Preprocess = torchvision.Preprocess


class Postprocess(BaseModel):
    """The region proposal network's test-time settings: the proposals kept per image."""

    rpn_pre_nms_top_n: int = Field(1000, ge=1, description="rcnn: proposals per feature level before the RPN's NMS")
    rpn_post_nms_top_n: int = Field(1000, ge=1, description=(
        "rcnn: proposals per image after the RPN's NMS, what the ROI heads see"))


def accepts(arch: str) -> bool:
    return arch in ARCHS


def defaults(arch: str, model: Any = None) -> ArchDefaults:
    return BUILDERS[arch].defaults()


settings_problem, smallest_input, largest_input_area = torchvision.over_builders(BUILDERS)
