"""The pipeline of a detector given as a file: preprocess (the layout's recipe, recipe.py and preparing.py),
forward (the file, on the runtime, with the extra inputs its graph takes), postprocess (the layout's decoding,
NMS where the graph has none, and the boxes back to the original images)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any, Optional, Sequence

import numpy as np
import torch
from torch import nn

from pipelines.boxes.nms import NmsSettings, NonMaxSuppression
from pipelines.contract import FORWARD_STAGE, DetectionPipeline, Detections, LayerTimingTargets, Stage
from pipelines.exported.decoding import cut_rows
from pipelines.exported.layouts.contract import Reading
from pipelines.exported.preparing import PreparedBatch, Prepare, Restore
from pipelines.runtimes.base import PreparedForward

POSTPROCESS = "postprocess"


def as_tuple(outputs: Any) -> tuple:
    """The graph's outputs as the layouts take them: a tuple in the graph's order, one output alone too."""
    return tuple(outputs) if isinstance(outputs, (tuple, list)) else (outputs,)


class Decode(nn.Module):
    """The graph's outputs -> per image (n, 6) x1 y1 x2 y2 score class in input pixels: the layout's raw rows,
    then YOLO's NMS where the layout has none, else the score cut alone (`settings`' conf_thres, max_det and
    classes)."""

    def __init__(self, layout: ModuleType, reading: Reading, settings: NmsSettings):
        super().__init__()
        self.layout, self.reading = layout, reading
        self.nms = NonMaxSuppression(settings)
        self.seen = Seen()

    @property
    def conf_thres(self) -> float:
        return self.nms.settings.conf_thres

    def at(self, conf_thres: float) -> "Decode":
        """The same decode at another score cut: a new one (a shallow copy would share its NMS submodule)."""
        return Decode(self.layout, self.reading, replace(self.nms.settings, conf_thres=conf_thres))

    def raw(self, outputs: Any, height: int, width: int) -> torch.Tensor:
        """(B, candidates, values): what agreement checks compare."""
        return self.layout.raw(as_tuple(outputs), self.reading, height, width)

    def scores(self, raw: torch.Tensor) -> torch.Tensor:
        if self.layout.NMS:
            return (raw[..., 5:] * raw[..., 4:5]).amax(dim=-1)
        return raw[..., 4]

    def forward(self, outputs: Any, height: int, width: int) -> list[torch.Tensor]:
        if hasattr(self.layout, "decode"):  # the author's own suppression, which follows the cut
            raw = self.layout.decode(as_tuple(outputs), self.reading, height, width, self.conf_thres,
                                     self.nms.settings.iou_thres)
        elif self.layout.NMS and hasattr(self.layout, "passing"):
            raw = self.layout.passing(as_tuple(outputs), self.reading, height, width, self.conf_thres)
        else:
            raw = self.raw(outputs, height, width)
        settings = self.nms.settings
        found = self.nms(raw) if self.layout.NMS else [cut_rows(rows, settings.conf_thres, settings.max_det,
                                                                settings.classes) for rows in raw]
        if self.reading.assumed:
            self.seen = self.seen.add(found, height, width)
        return found


@dataclass(frozen=True)
class Seen:
    """What a layout taken by assumption decoded so far: images, rows kept, and rows whose box lies outside the
    input or has no area (a wrong layout reads scores as coordinates and coordinates as scores)."""

    images: int = 0
    kept: int = 0
    implausible: int = 0

    def add(self, found: list[torch.Tensor], height: int, width: int) -> "Seen":
        rows = torch.cat(found) if found else torch.zeros(0, 6)
        x1, y1, x2, y2 = rows[:, :4].unbind(-1)
        outside = (x2 <= 0) | (y2 <= 0) | (x1 >= width) | (y1 >= height) | (x2 <= x1) | (y2 <= y1)
        return Seen(self.images + len(found), self.kept + len(rows), self.implausible + int(outside.sum()))

    def doubt(self) -> Optional[str]:
        if self.images and not self.kept:
            return f"no score passed the cut in any of {self.images} decoded image(s)"
        if self.kept and self.implausible * 2 > self.kept:
            return f"{self.implausible} of {self.kept} boxes lie outside the input or have no area"
        return None


@dataclass
class Forwarded:
    batch: PreparedBatch
    outputs: Any  # the file's output, or a tuple of its outputs


@dataclass
class Decoded:
    batch: PreparedBatch
    detections: list[torch.Tensor]


class ExportedPipeline(DetectionPipeline):
    family = "exported"

    def __init__(self, forward: PreparedForward, class_names: list[str], preprocess: Prepare, decode: Decode,
                 to_original: Restore, said: Optional[dict[str, Any]] = None):
        self.prepared = forward
        self.class_names = class_names
        self.preprocessor = preprocess
        self.decoder = decode
        self.restorer = to_original
        self.said = said  # the recipe applied and its ground (recipe_said.py)

    def recipe(self) -> Optional[dict[str, Any]]:
        return self.said

    @property
    def score_threshold(self) -> float:
        return self.decoder.conf_thres

    def preprocess(self, images: list[np.ndarray]) -> PreparedBatch:
        return self.preprocessor(images)

    def forward(self, batch: PreparedBatch) -> Forwarded:
        outputs = self.prepared(batch.tensor, batch.extra) if batch.extra else self.prepared(batch.tensor)
        # A runtime's own output buffer holds until this thread's next forward; decoding keeps what it needs.
        return Forwarded(batch, outputs)

    def decode(self, forwarded: Forwarded) -> Decoded:
        height, width = forwarded.batch.input_hw
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
        height, width = forwarded.batch.input_hw
        return self.decoder.raw(forwarded.outputs, int(height), int(width))

    def candidate_scores(self, raw: torch.Tensor) -> torch.Tensor:
        return self.decoder.scores(raw)

    def doubts(self) -> list[str]:
        reading = self.decoder.reading
        doubt = self.decoder.seen.doubt()
        if doubt is None:
            return []
        return [f"the file's layout {reading.layout} was taken by assumption ({reading.why}), and {doubt}: the "
                f"layout is likely another; set model.head to the one its exporter wrote (docs/models.md lists "
                "each layout and how it is told apart)"]

    def postprocess_at(self, forwarded: Forwarded, conf_thres: float) -> list[Detections]:
        height, width = forwarded.batch.input_hw
        decoded = self.decoder.at(conf_thres)(forwarded.outputs, int(height), int(width))
        return self.to_original(Decoded(forwarded.batch, decoded))
