"""R-CNN's pre- and post-processing around the network: torchvision's GeneralizedRCNNTransform, its two ends
run as pipeline stages. Each is an nn.Module so that per-layer timing attaches from outside."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np
import torch
from torch import nn
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.transform import GeneralizedRCNNTransform

from pipelines.contract import Detections

# The normalisation every torchvision R-CNN builder uses (ImageNet statistics of RGB in [0, 1]).
IMAGE_MEAN = (0.485, 0.456, 0.406)
IMAGE_STD = (0.229, 0.224, 0.225)
MASK_THRESHOLD = 0.5  # a pasted mask's probability above which a pixel belongs to the object


@dataclass
class TransformedBatch:
    images: ImageList  # normalised, resized, padded to the batch's largest (a multiple of 32)
    original_sizes: list[tuple[int, int]]


class Preprocess(nn.Module):
    """BGR uint8 images -> RGB float tensors in [0, 1] -> the model's transform (normalise, resize so the
    shorter side is min_size unless the longer would pass max_size, pad into one batch)."""

    def __init__(self, min_size: int, max_size: int):
        super().__init__()
        # eval: training mode would pick min_size at random and skip pasting masks
        self.transform = GeneralizedRCNNTransform(min_size, max_size, list(IMAGE_MEAN), list(IMAGE_STD)).eval()
        self.min_size, self.max_size = min_size, max_size

    def batch_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        """(B, 3, H, W) of the batch the transform makes of images of these (height, width) sizes: each is
        scaled as torchvision's resize does (interpolate floors size x scale), the batch padded to the
        largest, rounded up to a multiple of 32."""
        transform = self.transform
        min_size, max_size = float(transform.min_size[-1]), float(transform.max_size)
        resized = []
        for h, w in sizes:
            scale = min(min_size / min(h, w), max_size / max(h, w))
            resized.append((math.floor(float(h) * scale), math.floor(float(w) * scale)))
        divisor = transform.size_divisible
        height = -(-max(h for h, _ in resized) // divisor) * divisor
        width = -(-max(w for _, w in resized) // divisor) * divisor
        return len(resized), 3, height, width

    def forward(self, images: list[np.ndarray]) -> TransformedBatch:
        tensors = [torch.from_numpy(np.ascontiguousarray(self._thick_enough(image)[..., ::-1].transpose(2, 0, 1)))
                   .float().div_(255.0) for image in images]
        batch, _ = self.transform(tensors)
        return TransformedBatch(batch, [(int(image.shape[0]), int(image.shape[1])) for image in images])

    def _thick_enough(self, image: np.ndarray) -> np.ndarray:
        """A sliver of an image (1 x 5000) would resize to zero rows, which torch refuses mid-run: its thin side
        is stretched to what resizes to one pixel. Boxes still map back to the original size, axis by axis."""
        height, width = image.shape[:2]
        scale = min(self.min_size / min(height, width), self.max_size / max(height, width))
        needed = math.ceil(1 / scale)
        if min(height, width) >= needed:
            return image
        return cv2.resize(image, (max(width, needed), max(height, needed)), interpolation=cv2.INTER_NEAREST)


class Postprocess(nn.Module):
    """The transform's other end: boxes (and masks, pasted into the full image) back to each original image."""

    def __init__(self, transform: GeneralizedRCNNTransform):
        super().__init__()
        self.transform = transform

    def forward(self, detections: list[dict[str, torch.Tensor]], batch: TransformedBatch) -> list[Detections]:
        restored = self.transform.postprocess(detections, batch.images.image_sizes, batch.original_sizes)
        return [Detections(boxes=found["boxes"], scores=found["scores"], labels=found["labels"],
                           masks=found["masks"][:, 0] > MASK_THRESHOLD if "masks" in found else None)
                for found in restored]
