"""The R-CNN detection pipeline: preprocess (the model's transform), forward (backbone, rpn, roi_heads, timed
as parts from outside), postprocess (boxes and masks back to the original images)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from pipelines.contract import FORWARD_STAGE, DetectionPipeline, Detections, LayerTimingTargets, Stage
from pipelines.rcnn.network import TwoStageNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.torchvision_common.transform import Postprocess, Preprocess, TransformedBatch

RAW_COLUMNS = 6  # x1 y1 x2 y2 score label, per detection
BATCHING_NOTE = ("batch_size > 1: R-CNN pads every image of a batch to the batch's largest (bottom and right), "
                 "and the padding changes what the backbone and the RPN see, so detections differ from those "
                 "of the same images run one at a time")


@dataclass(frozen=True)
class HeadSettings:
    """The test-time settings torchvision keeps on the network's own modules: the box head's score cut, NMS IoU
    and detections kept, and the proposals the RPN keeps."""

    score_thresh: float
    nms_thresh: float
    detections_per_img: int
    rpn_pre_nms_top_n: int
    rpn_post_nms_top_n: int

    def apply(self, network: TwoStageNetwork) -> None:
        heads = network.roi_heads
        heads.score_thresh, heads.nms_thresh = self.score_thresh, self.nms_thresh
        heads.detections_per_img = self.detections_per_img
        network.rpn._pre_nms_top_n["testing"] = self.rpn_pre_nms_top_n
        network.rpn._post_nms_top_n["testing"] = self.rpn_post_nms_top_n


@dataclass
class Forwarded:
    batch: TransformedBatch
    detections: list[dict[str, torch.Tensor]]  # per image, in the resized input's pixels


class RcnnPipeline(DetectionPipeline):
    family = "rcnn"
    batching_note = BATCHING_NOTE

    def __init__(self, forward: PreparedForward, network: TwoStageNetwork, class_names: list[str],
                 preprocess: Preprocess, postprocess: Postprocess, settings: HeadSettings):
        self.prepared = forward
        self.network = network
        self.class_names = class_names
        self.preprocessor = preprocess
        self.postprocessor = postprocess
        self.settings = settings

    @property
    def score_threshold(self) -> float:
        return self.settings.score_thresh

    def preprocess(self, images: list[np.ndarray]) -> TransformedBatch:
        return self.preprocessor(images)

    def forward(self, batch: TransformedBatch) -> Forwarded:
        # The settings live on the network's modules, which the accuracy pass's pipeline shares at its own cut.
        self.settings.apply(self.network)
        return Forwarded(batch, self.prepared(batch.images.tensors, batch.images.image_sizes))

    def postprocess(self, forwarded: Forwarded) -> list[Detections]:
        return self.postprocessor(forwarded.detections, forwarded.batch)

    def input_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        return self.preprocessor.batch_shape(sizes)

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("preprocess", self.preprocess), Stage(FORWARD_STAGE, self.forward),
                Stage("postprocess", self.postprocess))

    def forward_parts(self) -> tuple[tuple[str, nn.Module], ...]:
        network = self.network
        return (("backbone", network.backbone), ("rpn", network.rpn), ("roi_heads", network.roi_heads))

    def layer_timing_targets(self) -> LayerTimingTargets:
        # rpn decodes and filters proposals, roi_heads decodes boxes and runs NMS, the FPN upsamples and adds:
        # functional code between their submodules, each reported as its own unattributed row.
        return LayerTimingTargets(self.prepared.module, (self.preprocessor,), (self.postprocessor,),
                                  functional_paths=("backbone.fpn", "rpn", "roi_heads"))

    def raw_output(self, forwarded: Forwarded) -> torch.Tensor:
        """The detections the network returned (before the score cut of postprocess_at), by rank: row i is
        each image's i-th highest score, zero rows after the last."""
        return detections_tensor(forwarded.detections, self.settings.detections_per_img)

    @staticmethod
    def candidate_scores(raw: torch.Tensor) -> torch.Tensor:
        return raw[..., 4]

    def postprocess_at(self, forwarded: Forwarded, conf_thres: float) -> list[Detections]:
        kept = [{key: value[found["scores"] > conf_thres] for key, value in found.items()}
                for found in forwarded.detections]
        return self.postprocessor(kept, forwarded.batch)


def detections_tensor(detections: list[dict[str, torch.Tensor]], rows: int) -> torch.Tensor:
    """(B, rows, 6) float32: x1 y1 x2 y2 score label of each image's detections in descending score order,
    zero-padded (torchvision returns at most detections_per_img, so `rows` of that holds them all)."""
    raw = torch.zeros(len(detections), rows, RAW_COLUMNS)
    for slot, found in zip(raw, detections):
        order = torch.argsort(found["scores"], descending=True, stable=True)[:rows]
        slot[: len(order), :4] = found["boxes"][order].float()
        slot[: len(order), 4] = found["scores"][order].float()
        slot[: len(order), 5] = found["labels"][order].float()
    return raw
