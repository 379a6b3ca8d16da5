"""torchvision's GeneralizedRCNNTransform, its two ends run as pipeline stages around the network: every
torchvision detector (R-CNN, RetinaNet, FCOS, SSD) prepares its input and maps its boxes back this way. Each end
is an nn.Module so that per-layer timing attaches from outside."""
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
from pipelines.torchvision_common.facts import Builder

MASK_THRESHOLD = 0.5  # a pasted mask's probability above which a pixel belongs to the object


@dataclass
class TransformedBatch:
    images: ImageList  # normalised, resized, padded to the batch's largest (a multiple of size_divisible)
    original_sizes: list[tuple[int, int]]


@dataclass(frozen=True)
class TransformSettings:
    """What the transform does: the shorter side to min_size unless the longer would pass max_size (or a fixed
    square of min_size), normalised by mean and std, padded to a multiple of size_divisible."""

    min_size: int
    max_size: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    size_divisible: int = 32
    fixed_size: bool = False

    def build(self) -> GeneralizedRCNNTransform:
        fixed = (self.min_size, self.min_size) if self.fixed_size else None
        # eval: training mode would pick min_size at random and skip pasting masks
        return GeneralizedRCNNTransform(self.min_size, self.max_size, list(self.mean), list(self.std),
                                        size_divisible=self.size_divisible, fixed_size=fixed).eval()

    @classmethod
    def of(cls, builder: Builder, preprocess) -> "TransformSettings":
        """The builder's transform at the config's preprocess settings (img_size, max_size, mean, std)."""
        return cls(preprocess.img_size, preprocess.max_size, tuple(preprocess.mean), tuple(preprocess.std),
                   builder.size_divisible, builder.fixed_size)

    @classmethod
    def calibrating(cls, builder: Builder, min_size: int, max_size: int) -> "TransformSettings":
        """The builder's transform at small sizes (a fixed square at its own), for calibrating random weights on
        the bundled photos."""
        if builder.fixed_size:
            min_size = max_size = builder.min_size
        return cls(min_size, max_size, builder.mean, builder.std, builder.size_divisible, builder.fixed_size)


class Preprocess(nn.Module):
    """BGR uint8 images -> RGB float tensors in [0, 1] -> the model's transform (normalise, resize, pad into one
    batch)."""

    def __init__(self, settings: TransformSettings):
        super().__init__()
        self.transform = settings.build()
        self.settings = settings

    def batch_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        """(B, 3, H, W) of the batch the transform makes of images of these (height, width) sizes: each is
        scaled as torchvision's resize does (interpolate floors size x scale) or to the fixed square, the batch
        padded to the largest, rounded up to a multiple of size_divisible."""
        settings = self.settings
        resized = []
        for h, w in sizes:
            if settings.fixed_size:
                resized.append((settings.min_size, settings.min_size))
                continue
            scale = min(settings.min_size / min(h, w), settings.max_size / max(h, w))
            resized.append((math.floor(float(h) * scale), math.floor(float(w) * scale)))
        divisor = settings.size_divisible
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
        if self.settings.fixed_size:
            return image
        height, width = image.shape[:2]
        scale = min(self.settings.min_size / min(height, width), self.settings.max_size / max(height, width))
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
        # torchvision writes the restored boxes and masks into the dicts it is given: copies keep the forward's own
        # detections as they were, for another cut of the same forward (postprocess_at).
        restored = self.transform.postprocess([dict(found) for found in detections], batch.images.image_sizes,
                                              batch.original_sizes)
        return [Detections(boxes=found["boxes"], scores=found["scores"], labels=found["labels"],
                           masks=found["masks"][:, 0] > MASK_THRESHOLD if "masks" in found else None)
                for found in restored]
