"""The dense detection pipeline: preprocess (the model's transform), forward (backbone and head, one piece),
postprocess (decode: anchors, box decoding and NMS; scale_boxes: back to the original images)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from pipelines.contract import FORWARD_STAGE, DetectionPipeline, Detections, LayerTimingTargets, Stage
from pipelines.dense.network import Decode
from pipelines.runtimes.base import PreparedForward
from pipelines.torchvision_common.transform import Postprocess, Preprocess, TransformedBatch

POSTPROCESS = "postprocess"
PADDING_NOTE = ("batch_size > 1: the transform pads every image of a batch to the batch's largest (bottom and right), "
                "and the padding changes what the backbone and the head see, so detections differ from those of the "
                "same images run one at a time")


@dataclass
class Forwarded:
    batch: TransformedBatch
    joined: torch.Tensor  # (B, candidates, values): the head's outputs side by side (network.JOINED_ORDER)


@dataclass
class Decoded:
    batch: TransformedBatch
    detections: list[dict[str, torch.Tensor]]  # per image, in the resized input's pixels


class DensePipeline(DetectionPipeline):
    family = "dense"

    def __init__(self, forward: PreparedForward, class_names: list[str], preprocess: Preprocess, decode: Decode,
                 postprocess: Postprocess):
        self.prepared = forward
        self.class_names = class_names
        self.preprocessor = preprocess
        self.decoder = decode
        self.postprocessor = postprocess

    @property
    def score_threshold(self) -> float:
        return self.decoder.score_thresh

    @property
    def batching_note(self) -> Optional[str]:
        """SSD's fixed square needs no padding; an input resized by its sides is padded to the batch's largest."""
        return None if self.preprocessor.settings.fixed_size else PADDING_NOTE

    def preprocess(self, images: list[np.ndarray]) -> TransformedBatch:
        return self.preprocessor(images)

    def forward(self, batch: TransformedBatch) -> Forwarded:
        return Forwarded(batch, self.prepared(batch.images.tensors))

    def decode(self, forwarded: Forwarded) -> Decoded:
        return Decoded(forwarded.batch, self.decoder(forwarded.joined, forwarded.batch.images))

    def to_original(self, decoded: Decoded) -> list[Detections]:
        return self.postprocessor(decoded.detections, decoded.batch)

    def input_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        return self.preprocessor.batch_shape(sizes)

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("preprocess", self.preprocess), Stage(FORWARD_STAGE, self.forward),
                Stage("decode", self.decode, POSTPROCESS), Stage("scale_boxes", self.to_original, POSTPROCESS))

    def layer_timing_targets(self) -> LayerTimingTargets:
        # The FPN upsamples and adds, and the head reshapes each level's maps and joins them: functional code
        # between their submodules, each reported as its own unattributed row.
        return LayerTimingTargets(self.prepared.module, (self.preprocessor,), (self.decoder, self.postprocessor),
                                  functional_paths=("head",))

    def raw_output(self, forwarded: Forwarded) -> torch.Tensor:
        return forwarded.joined

    def candidate_scores(self, raw: torch.Tensor) -> torch.Tensor:
        return self.decoder.candidate_scores(raw)

    def postprocess_at(self, forwarded: Forwarded, conf_thres: float) -> list[Detections]:
        decoded = self.decoder.at(conf_thres)(forwarded.joined, forwarded.batch.images)
        return self.postprocessor(decoded, forwarded.batch)
