"""What the dense family (torchvision's single-stage detectors: RetinaNet, FCOS, SSD, SSDlite) states about
itself, light enough for the config schema (no torch): its architectures with their builders' defaults, its
input geometry, its own postprocess key, its output, and that its forward is timed in one piece."""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

from pipelines.settings import ArchDefaults, ForwardTiming
from pipelines.torchvision_common import facts as torchvision
from pipelines.torchvision_common.facts import (Builder, input_size, reference_backend,  # noqa: F401
                                               unsupported_runtime)

NAME = "dense"
_FPN = dict(min_size=800, max_size=1333)
_FIXED = dict(fixed_size=True, size_divisible=1)
# torchvision's builders' own test-time defaults (a test checks each row against the builder). Another of
# torchvision's single-stage detectors is its builder's name and a row here.
BUILDERS = {
    "retinanet_resnet50_fpn": Builder(**_FPN, score_thresh=0.05, nms_thresh=0.5, detections_per_img=300,
                                      topk_candidates=1000),
    "retinanet_resnet50_fpn_v2": Builder(**_FPN, score_thresh=0.05, nms_thresh=0.5, detections_per_img=300,
                                         topk_candidates=1000),
    "fcos_resnet50_fpn": Builder(**_FPN, score_thresh=0.2, nms_thresh=0.6, detections_per_img=100,
                                 topk_candidates=1000),
    "ssd300_vgg16": Builder(300, 300, score_thresh=0.01, nms_thresh=0.45, detections_per_img=200,
                            mean=(0.48235, 0.45882, 0.40784), std=(1.0 / 255.0,) * 3, topk_candidates=400, smallest_input=268,
                            **_FIXED),
    "ssdlite320_mobilenet_v3_large": Builder(320, 320, score_thresh=0.001, nms_thresh=0.55, detections_per_img=300,
                                             mean=(0.5,) * 3, std=(0.5,) * 3, topk_candidates=300, **_FIXED),
}
ARCHS = tuple(BUILDERS)
ARCH_FILES: tuple[str, ...] = ()  # torchvision's builders only
ARCH_FILE_TEXT = ""
STRIDE = 32  # the FPN's padding; SSD's fixed square needs none
SIZE_KEYS = ("img_size", "max_size")  # the preprocess keys that set the input size, in the memory check's advice
OUTPUT_LAYOUT = ("(batch, candidates, 4 [+ 1] + classes): each anchor's (or location's) box regression, FCOS's "
                 "centerness logit, then the class logits (SSD's first class is the background)")
EVALUATION_PREPROCESS = None  # torchvision evaluates through the transform it deploys
FORWARD_TIMING = ForwardTiming.WHOLE  # backbone and head in one graph; anchors, decoding and NMS after it
# The joined head outputs stay in float under int8: box regressions and class logits side by side.
KEEP_FLOAT = ("JoinedOutputs",)

Preprocess = torchvision.Preprocess


class Postprocess(BaseModel):
    """The candidates each feature level passes to NMS."""

    topk_candidates: Optional[int] = Field(None, ge=1, description=(
        "dense: candidates kept per feature level (SSD: per class) before NMS; null: the architecture's own"))


def accepts(arch: str) -> bool:
    return arch in ARCHS


def defaults(arch: str, model: Any = None) -> ArchDefaults:
    return BUILDERS[arch].defaults(KEEP_FLOAT)


settings_problem, smallest_input, largest_input_area = torchvision.over_builders(BUILDERS)
