"""The pipeline of a detector given as a file: preprocess (YOLO's letterbox, or the image stretched to the input
as DETR-style exporters' predictors do), forward (the file, on the runtime), postprocess (the layout's decoding,
NMS where the graph has none, and the boxes back to the original images)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import cv2
import numpy as np
import torch
from torch import nn

from pipelines.contract import FORWARD_STAGE, DetectionPipeline, Detections, LayerTimingTargets, Stage
from pipelines.exported.decoding import cut_rows, decode_queries, yolov8_as_yolov5
from pipelines.exported.layouts import Layout, ReadLayout
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo.boxes import clip_boxes
from pipelines.yolo.stages import NonMaxSuppression, Preprocess as Letterbox

POSTPROCESS = "postprocess"


@dataclass
class StretchedBatch:
    tensor: torch.Tensor
    original_shapes: list[tuple[int, int]]


class Stretch(nn.Module):
    """Each BGR image resized to the square input (aspect not kept, as RT-DETR's and DETR's predictors do), as
    RGB in [0, 1], normalised by mean and std."""

    def __init__(self, img_size: int, mean: Sequence[float], std: Sequence[float]):
        super().__init__()
        self.img_size = img_size
        self.mean = torch.tensor(mean, dtype=torch.float32)[:, None, None]
        self.std = torch.tensor(std, dtype=torch.float32)[:, None, None]

    def batch_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        return len(sizes), 3, self.img_size, self.img_size

    def forward(self, images: list[np.ndarray]) -> StretchedBatch:
        planes = [cv2.resize(image, (self.img_size, self.img_size), interpolation=cv2.INTER_LINEAR)[..., ::-1]
                  for image in images]
        tensor = torch.from_numpy(np.ascontiguousarray(np.stack(planes).transpose(0, 3, 1, 2))).float().div_(255.0)
        tensor.sub_(self.mean).div_(self.std)
        return StretchedBatch(tensor, [image.shape[:2] for image in images])


class Unstretch(nn.Module):
    """Boxes from the square input back to each original image, axis by axis, clipped to it."""

    def forward(self, detections: list[torch.Tensor], batch: StretchedBatch) -> list[torch.Tensor]:
        side = batch.tensor.shape[-1]
        restored = []
        for found, (height, width) in zip(detections, batch.original_shapes):
            scaled = found.clone()
            scaled[:, :4] *= scaled.new_tensor([width / side, height / side, width / side, height / side])
            restored.append(clip_boxes(scaled, (height, width)))
        return restored


class Decode(nn.Module):
    """A layout's raw output(s) -> per image (n, 6) x1 y1 x2 y2 score class in input pixels: YOLO's NMS for the
    layouts without it, the score cut alone for those whose graph or head leaves one box per object."""

    def __init__(self, found: ReadLayout, conf_thres: float, iou_thres: float, max_det: int,
                 classes: Any = None, agnostic: bool = False, multi_label: bool = False):
        super().__init__()
        self.found = found
        self.conf_thres, self.max_det, self.classes = conf_thres, max_det, classes
        self.nms = NonMaxSuppression(conf_thres, iou_thres, max_det, classes, agnostic, multi_label)

    def at(self, conf_thres: float) -> "Decode":
        """The same decode at another score cut: a new one (a shallow copy would share its NMS submodule)."""
        nms = self.nms
        return Decode(self.found, conf_thres, nms.iou_thres, self.max_det, self.classes, nms.agnostic, nms.multi_label)

    def raw(self, outputs: Any) -> torch.Tensor:
        """(B, candidates, values): what agreement checks compare."""
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        layout = self.found.layout
        if layout == Layout.YOLOV8:
            return yolov8_as_yolov5(outputs[0].float())
        if layout == Layout.DETR:
            boxes = self.found.boxes_output
            return torch.cat((outputs[boxes].float(), outputs[1 - boxes].float()), dim=2)
        return outputs[0].float()

    def scores(self, raw: torch.Tensor) -> torch.Tensor:
        layout = self.found.layout
        if layout.suppresses:
            return (raw[..., 5:] * raw[..., 4:5]).amax(dim=-1)
        if layout == Layout.END2END:
            return raw[..., 4]
        scores = raw[..., 4:]
        return (scores.sigmoid() if layout == Layout.DETR else scores).amax(dim=-1)

    def forward(self, outputs: Any, height: int, width: int) -> list[torch.Tensor]:
        layout = self.found.layout
        if layout.suppresses:
            return self.nms(self.raw(outputs))
        outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
        return [cut_rows(rows, self.conf_thres, self.max_det, self.classes)
                for rows in decode_queries(layout, outputs, self.found.boxes_output, height, width)]


@dataclass
class Forwarded:
    batch: Any  # YOLO's PreprocessedBatch (letterboxed) or a StretchedBatch
    outputs: Any  # the file's output, or a tuple of its outputs


@dataclass
class Decoded:
    batch: Any
    detections: list[torch.Tensor]


class ExportedPipeline(DetectionPipeline):
    family = "exported"

    def __init__(self, forward: PreparedForward, class_names: list[str], preprocess: nn.Module, decode: Decode,
                 to_original: nn.Module):
        self.prepared = forward
        self.class_names = class_names
        self.preprocessor = preprocess
        self.decoder = decode
        self.restorer = to_original

    @property
    def score_threshold(self) -> float:
        return self.decoder.conf_thres

    def preprocess(self, images: list[np.ndarray]) -> Any:
        return self.preprocessor(images)

    def forward(self, batch: Any) -> Forwarded:
        outputs = self.prepared(batch.tensor)
        # A runtime's own output buffer holds until this thread's next forward; decoding keeps what it needs.
        return Forwarded(batch, outputs)

    def decode(self, forwarded: Forwarded) -> Decoded:
        height, width = forwarded.batch.tensor.shape[-2:]
        return Decoded(forwarded.batch, self.decoder(forwarded.outputs, int(height), int(width)))

    def to_original(self, decoded: Decoded) -> list[Detections]:
        return [Detections(boxes=det[:, :4], scores=det[:, 4], labels=det[:, 5].long())
                for det in self.restorer(decoded.detections, decoded.batch)]

    def input_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        return self.preprocessor.batch_shape(sizes)

    def stages(self) -> tuple[Stage, ...]:
        return (Stage("preprocess", self.preprocess), Stage(FORWARD_STAGE, self.forward),
                Stage("decode", self.decode, POSTPROCESS), Stage("scale_boxes", self.to_original, POSTPROCESS))

    def layer_timing_targets(self) -> LayerTimingTargets:
        return LayerTimingTargets(None, (self.preprocessor,), (self.decoder, self.restorer))

    def raw_output(self, forwarded: Forwarded) -> torch.Tensor:
        return self.decoder.raw(forwarded.outputs)

    def candidate_scores(self, raw: torch.Tensor) -> torch.Tensor:
        return self.decoder.scores(raw)

    def postprocess_at(self, forwarded: Forwarded, conf_thres: float) -> list[Detections]:
        height, width = forwarded.batch.tensor.shape[-2:]
        decoded = self.decoder.at(conf_thres)(forwarded.outputs, int(height), int(width))
        return self.to_original(Decoded(forwarded.batch, decoded))


def letterbox(img_size: int, pixels: bool) -> Letterbox:
    """YOLO exports' predictors letterbox to the centred square, padded with grey 114."""
    return Letterbox(img_size, rect=False, pad_value=114, stride=32, pixels=pixels)

