"""torchvision's single-stage detectors as detbench runs them: the network is the backbone and the head, on the
padded batch, returning the head's outputs joined into one tensor (so an exported graph has one output, as YOLO's
has); anchors, box decoding and NMS run after it, as torchvision's own postprocess_detections."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.ssd import SSD

BOXES, CENTERNESS, CLASSES = "bbox_regression", "bbox_ctrness", "cls_logits"
JOINED_ORDER = (BOXES, CENTERNESS, CLASSES)  # the raw output's columns: 4 box values, [1 centerness], classes


class JoinedOutputs(nn.Module):
    """The head's outputs (each (B, candidates, values)) side by side in JOINED_ORDER."""

    def forward(self, outputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.cat([outputs[key] for key in JOINED_ORDER if key in outputs], dim=2)


@dataclass(frozen=True)
class DecodingParts:
    """What decodes the network's output, kept from the torchvision model it was built as (no weights)."""

    kind: type  # the model's class, whose postprocess_detections decodes
    anchor_generator: nn.Module
    box_coder: Any
    has_centerness: bool


class DenseNetwork(nn.Module):
    """backbone -> head of a torchvision RetinaNet, FCOS or SSD. The parts are torchvision's own modules, so the
    state_dict keys are torchvision's."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.backbone = model.backbone
        self.head = model.head
        self.joined = JoinedOutputs()
        # A plain attribute, not a submodule: the network's forward never runs it.
        self.decoding = DecodingParts(type(model), model.anchor_generator, model.box_coder,
                                      hasattr(model.head.regression_head, CENTERNESS))

    def forward(self, tensors: torch.Tensor) -> torch.Tensor:
        features = self.backbone(tensors)
        if isinstance(features, torch.Tensor):
            features = {"0": features}
        return self.joined(self.head(list(features.values())))


class LevelSizes:
    """The (height, width) of each feature level for an input size, from a copy of the backbone on the meta device
    (shapes without arithmetic), remembered per size: anchors need them, and the joined output no longer shows them."""

    def __init__(self, backbone: nn.Module):
        self.backbone = copy.deepcopy(backbone).to("meta").eval()
        self.known: dict[tuple[int, int], list[tuple[int, int]]] = {}

    def __call__(self, height: int, width: int) -> list[tuple[int, int]]:
        if (height, width) not in self.known:
            with torch.no_grad():
                features = self.backbone(torch.empty(1, 3, height, width, device="meta"))
            maps = [features] if isinstance(features, torch.Tensor) else list(features.values())
            self.known[(height, width)] = [(int(level.shape[-2]), int(level.shape[-1])) for level in maps]
        return self.known[(height, width)]


def classification_convs(head: nn.Module) -> list[nn.Conv2d]:
    """The convolutions whose outputs are the class logits: RetinaNet's and FCOS's cls_logits, or the last conv of
    each of SSD's per-level predictors."""
    classifier = head.classification_head
    if hasattr(classifier, "cls_logits"):
        return [classifier.cls_logits]
    return [[m for m in level.modules() if isinstance(m, nn.Conv2d)][-1] for level in classifier.module_list]


class Decode(nn.Module):
    """The joined raw output -> per image boxes, scores and labels in the resized input's pixels, by torchvision's
    own postprocess_detections of the model's class, with this pipeline's cut, NMS IoU, detections kept and
    candidates per level."""

    def __init__(self, parts: DecodingParts, level_sizes: LevelSizes, score_thresh: float, nms_thresh: float,
                 detections_per_img: int, topk_candidates: int):
        super().__init__()
        self.kind = parts.kind
        self.anchor_generator = parts.anchor_generator
        self.box_coder = parts.box_coder
        self.level_sizes = level_sizes
        self.has_centerness = parts.has_centerness
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh
        self.detections_per_img, self.topk_candidates = detections_per_img, topk_candidates

    def at(self, score_thresh: float) -> "Decode":
        """The same decode at another score cut."""
        other = copy.copy(self)
        other.score_thresh = score_thresh
        return other

    @property
    def has_background(self) -> bool:
        """SSD scores its classes by a softmax whose first class is the background."""
        return self.kind is SSD

    @property
    def class_start(self) -> int:
        return 5 if self.has_centerness else 4

    def split(self, joined: torch.Tensor) -> dict[str, torch.Tensor]:
        """The head's outputs apart again, each contiguous as the head made it: elementwise kernels on a strided
        view may round differently (1 ulp), and detections would then differ from torchvision's own."""
        outputs = {BOXES: joined[..., :4], CLASSES: joined[..., self.class_start:]}
        if self.has_centerness:
            outputs[CENTERNESS] = joined[..., 4:5]
        return {key: value.contiguous() for key, value in outputs.items()}

    def candidate_scores(self, joined: torch.Tensor) -> torch.Tensor:
        """(B, candidates): each candidate's best class score, as postprocess_detections scores it."""
        logits = joined[..., self.class_start:]
        if self.has_background:
            return torch.softmax(logits, dim=-1)[..., 1:].amax(dim=-1)
        scores = torch.sigmoid(logits)
        if self.has_centerness:
            scores = torch.sqrt(scores * torch.sigmoid(joined[..., 4:5]))
        return scores.amax(dim=-1)

    def forward(self, joined: torch.Tensor, images: ImageList) -> list[dict[str, torch.Tensor]]:
        sizes = self.level_sizes(int(images.tensors.shape[-2]), int(images.tensors.shape[-1]))
        # Anchors read only the feature maps' sizes, dtype and device: empty maps of those sizes stand in.
        features = [torch.empty((0, 0, h, w), dtype=joined.dtype) for h, w in sizes]
        anchors = self.anchor_generator(images, features)
        outputs = self.split(joined)
        postprocess: Callable = self.kind.postprocess_detections
        if self.kind is SSD:
            return postprocess(self, outputs, anchors, images.image_sizes)
        per_location = int(joined.shape[1]) // sum(h * w for h, w in sizes)
        counts = [h * w * per_location for h, w in sizes]
        split_outputs = {key: list(value.split(counts, dim=1)) for key, value in outputs.items()}
        split_anchors = [list(a.split(counts)) for a in anchors]
        return postprocess(self, split_outputs, split_anchors, images.image_sizes)

