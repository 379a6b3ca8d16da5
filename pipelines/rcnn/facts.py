"""What the R-CNN family (torchvision's two-stage detectors) states about itself, light enough for the config
schema (no torch): the architectures it builds, its input geometry, the preprocess and postprocess keys it
reads (torchvision's names and defaults), its output, and the runtimes that can run it."""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field

from pipelines.runtimes import registry as runtimes

NAME = "rcnn"
ARCHS = ("fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
         "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2")
ARCH_FILES: tuple[str, ...] = ()  # no definition files: torchvision's builders only
ARCH_FILE_TEXT = ""
STRIDE = 32  # the FPN's coarsest level; the transform pads the batch to a multiple of it
SIZE_KEYS = ("min_size", "max_size")  # the preprocess keys that set the input size, in the memory check's advice
# The forward's raw output, per image as torchvision's roi_heads return it.
OUTPUT_LAYOUT = "per image: boxes (N, 4) x1 y1 x2 y2 in input pixels, labels (N,), scores (N,), and masks " \
                "(N, 1, H, W) for Mask R-CNN"
# torchvision evaluates its COCO mAP through the transform it deploys.
EVALUATION_PREPROCESS = None


class Preprocess(BaseModel):
    """The shorter side is resized to min_size unless the longer would then exceed max_size."""

    min_size: int = Field(800, ge=32, description="rcnn: the shorter side is resized to this...")
    max_size: int = Field(1333, ge=32, description="rcnn: ...unless the longer side would then exceed this")


class Postprocess(BaseModel):
    """torchvision's test-time settings; the rpn ones are the proposals kept per image."""

    box_score_thresh: float = Field(0.05, ge=0.0, le=1.0, description="rcnn: detections kept above this class score")
    box_nms_thresh: float = Field(0.5, ge=0.0, le=1.0, description="rcnn: per-class NMS IoU threshold of the box head")
    detections_per_img: int = Field(100, ge=1, description="rcnn: detections kept per image")
    rpn_pre_nms_top_n: int = Field(1000, ge=1, description="rcnn: proposals per feature level before the RPN's NMS")
    rpn_post_nms_top_n: int = Field(1000, ge=1, description=(
        "rcnn: proposals per image after the RPN's NMS, what the ROI heads see"))


def accepts(arch: str) -> bool:
    return arch in ARCHS


def unsupported_runtime(runtime) -> Optional[str]:
    """Its forward is timed in parts with hooks: only a runtime that runs the torch modules themselves can
    run it, and not compiled."""
    keeping = runtimes.keeping_modules()
    if runtime.backend not in [spec.name for spec in keeping]:
        advice = " or ".join(f"{spec.name} (precision {' or '.join(spec.precisions)})" for spec in keeping)
        return (f"runtime.backend {runtime.backend} is not supported for this family ({NAME}, model.arch "
                f"{', '.join(ARCHS)}): its forward is timed in parts (backbone, rpn, roi_heads) that an exported "
                f"graph does not keep apart; use runtime.backend {advice}")
    if getattr(runtime, "compile", False):
        return (f"runtime.compile is not supported for this family ({NAME}): its forward is timed in parts "
                "with hooks, which break a compiled graph; remove runtime.compile")
    return None


def input_size(preprocess) -> int:
    return preprocess.min_size


def largest_input_area(preprocess) -> int:
    # The shorter side goes to min_size unless the longer would pass max_size: at most min_size x max_size.
    return min(preprocess.min_size, preprocess.max_size) * preprocess.max_size
