"""torchvision's two-stage detectors as detbench runs them: built by torchvision's builders, without downloads,
split at the transform's two ends so that preprocessing and postprocessing are pipeline stages of their own."""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional

import torch
from torch import nn
from torchvision.models.detection.generalized_rcnn import GeneralizedRCNN
from torchvision.models.detection.image_list import ImageList


class TwoStageNetwork(nn.Module):
    """GeneralizedRCNN's forward between its transform's two ends: backbone -> rpn -> roi_heads, on a padded
    batch tensor, returning per image the dict of boxes, labels, scores (and masks) in the resized input's
    pixels. The parts are torchvision's own modules, so the state_dict keys are torchvision's."""

    def __init__(self, model: GeneralizedRCNN):
        super().__init__()
        self.backbone = model.backbone
        self.rpn = model.rpn
        self.roi_heads = model.roi_heads

    def forward(self, tensors: torch.Tensor,
                image_sizes: Optional[list[tuple[int, int]]] = None) -> list[dict[str, torch.Tensor]]:
        """`image_sizes`: each image's size inside the padded batch; None: every image fills it."""
        if image_sizes is None:
            image_sizes = [(int(tensors.shape[-2]), int(tensors.shape[-1]))] * int(tensors.shape[0])
        features = self.backbone(tensors)
        if isinstance(features, torch.Tensor):
            features = OrderedDict([("0", features)])
        proposals, _ = self.rpn(ImageList(tensors, image_sizes), features)
        detections, _ = self.roi_heads(features, proposals, image_sizes)
        return detections
