"""The YOLO detection pipeline: preprocess (letterbox), forward, postprocess (nms, scale_boxes)."""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from pipelines.contract import FORWARD_STAGE, DetectionPipeline, Detections, LayerTimingTargets, Stage
from pipelines.runtimes.base import PreparedForward
from pipelines.boxes.nms import NonMaxSuppression
from pipelines.yolo.stages import PreprocessedBatch, Preprocess, ScaleBoxes

POSTPROCESS = "postprocess"


@dataclass
class Forwarded:
    batch: PreprocessedBatch
    prediction: torch.Tensor  # (B, candidates, 5 + nc) in letterboxed input pixels


@dataclass
class Suppressed:
    batch: PreprocessedBatch
    detections: list[torch.Tensor]  # per image (n, 6): x1 y1 x2 y2 score class, letterboxed pixels


class YoloPipeline(DetectionPipeline):
    family = "yolo"

    def __init__(self, forward: PreparedForward, class_names: list[str], preprocess: Preprocess,
                 nms: NonMaxSuppression, scale_boxes: ScaleBoxes):
        self.prepared = forward
        self.class_names = class_names
        self.preprocessor = preprocess
        self.nms = nms
        self.scale_boxes = scale_boxes

    @property
    def score_threshold(self) -> float:
        return self.nms.settings.conf_thres

    def preprocess(self, images: list[np.ndarray]) -> PreprocessedBatch:
        return self.preprocessor(images)

    def forward(self, batch: PreprocessedBatch) -> Forwarded:
        return Forwarded(batch, self.prepared(batch.tensor))

    def suppress(self, forwarded: Forwarded) -> Suppressed:
        return Suppressed(forwarded.batch, self.nms(forwarded.prediction))

    def to_original(self, suppressed: Suppressed) -> list[Detections]:
        return [Detections(boxes=det[:, :4], scores=det[:, 4], labels=det[:, 5].long())
                for det in self.scale_boxes(suppressed.detections, suppressed.batch)]

    def raw_output(self, forwarded: Forwarded) -> torch.Tensor:
        return forwarded.prediction

    @staticmethod
    def candidate_scores(raw: torch.Tensor) -> torch.Tensor:
        """obj x best class probability, the score NMS thresholds (per class product, then the max)."""
        return (raw[..., 5:] * raw[..., 4:5]).amax(dim=-1)

    def postprocess_at(self, forwarded: Forwarded, conf_thres: float) -> list[Detections]:
        nms = copy.copy(self.nms)
        nms.settings = replace(nms.settings, conf_thres=conf_thres)
        return self.to_original(Suppressed(forwarded.batch, nms(forwarded.prediction)))

    def input_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        return self.preprocessor.batch_shape(sizes)

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("preprocess", self.preprocess), Stage(FORWARD_STAGE, self.forward),
                Stage("nms", self.suppress, POSTPROCESS), Stage("scale_boxes", self.to_original, POSTPROCESS))

    def layer_timing_targets(self) -> LayerTimingTargets:
        return LayerTimingTargets(self.prepared.module, (self.preprocessor,), (self.nms, self.scale_boxes))
