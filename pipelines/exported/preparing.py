"""A recipe (recipe.py) applied: decoded BGR images -> the graph's input batch, the extra inputs it takes, and
where each image landed in it, so boxes map back. Each step is an nn.Module so layer timing hooks it from
outside; the arithmetic of where an image lands is pure (`placement`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from pipelines.boxes.conversions import clip_boxes
from pipelines.boxes.letterbox import letterbox_geometry, pad_to_square, square_pad_geometry
from pipelines.exported.recipe import Recipe

OPENCV = {"linear": cv2.INTER_LINEAR, "nearest": cv2.INTER_NEAREST, "cubic": cv2.INTER_CUBIC, "area": cv2.INTER_AREA}
TORCH = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic", "area": "area"}
ANTIALIASED = ("bilinear", "bicubic")  # the modes torch antialiases (torchvision's resize: the others as they are)
PIL_FILTERS = {"linear": Image.BILINEAR, "nearest": Image.NEAREST, "cubic": Image.BICUBIC, "area": Image.BOX}


@dataclass(frozen=True)
class Placement:
    """Where an h x w image lands in the input: resized to `size` (w, h), scaled by (scale_x, scale_y), its top
    left corner at (left, top). A box maps back as (x - left) / scale_x, (y - top) / scale_y."""

    size: tuple[int, int]
    scale_x: float
    scale_y: float
    left: int = 0
    top: int = 0


def placement(height: int, width: int, target: tuple[int, int], resize: str, inset: int = 0) -> Placement:
    """`letterbox`: Ultralytics' (aspect kept, rounded, centred; the odd pixel to the bottom right), fitting the
    input less `inset` pixels at each edge (super-gradients' 636 of 640); `letterbox_corner`: YOLOX's and
    PaddleDetection's (aspect kept, truncated, at the top left); `pad_then_resize`: the square the image is padded
    to, resized to the whole input; `stretch`: each axis to the input's."""
    target_h, target_w = target
    if resize == "stretch":
        return Placement((target_w, target_h), target_w / width, target_h / height)
    if resize == "pad_then_resize":
        square = square_pad_geometry(height, width, target)
        return Placement((target_w, target_h), square.scale_x, square.scale_y)
    if resize == "letterbox":
        geometry = letterbox_geometry(height, width, (target_h - 2 * inset, target_w - 2 * inset), auto=False)
        return Placement(geometry.new_unpad, geometry.ratio, geometry.ratio, geometry.pad_left + inset,
                         geometry.pad_top + inset)
    ratio = min(target_h / height, target_w / width)
    return Placement((max(1, int(width * ratio)), max(1, int(height * ratio))), ratio, ratio)


@dataclass
class PreparedBatch:
    tensor: torch.Tensor
    extra: Mapping[str, np.ndarray]  # the graph's further inputs by name
    placements: list[Placement]
    original_shapes: list[tuple[int, int]]


def _extra_input(filler: str, original_shapes: Sequence[tuple[int, int]], placements: Sequence[Placement],
                 target: tuple[int, int]) -> np.ndarray:
    """What fills an extra input, per image: its original (width, height) as int64 (D-FINE's orig_target_sizes);
    the resize's (scale_y, scale_x) (PaddleDetection's scale_factor); the input's (height, width) as float
    (its im_shape); a mask of ones over the input (Hugging Face's pixel_mask)."""
    if filler == "original_wh":
        return np.array([[w, h] for h, w in original_shapes], dtype=np.int64)
    if filler == "scale_yx":
        return np.array([[p.scale_y, p.scale_x] for p in placements], dtype=np.float32)
    if filler == "input_hw":
        return np.array([list(target) for _ in placements], dtype=np.float32)
    if filler == "pixel_mask":
        return np.ones((len(placements), *target), dtype=np.int64)
    raise ValueError(f"no filler {filler!r} for an extra input")


class Prepare(nn.Module):
    """Each BGR image resized and placed as the recipe says, in one batch tensor of the input's size (padding
    `pad_value`), channels ordered, divided by `scale`, normalised; with `pixels`, the 8-bit values themselves
    for a runtime that converts them inside its graph (PreparedForward.input_dtype)."""

    def __init__(self, recipe: Recipe, target: tuple[int, int], extra_inputs: Mapping[str, str] = (),
                 pixels: bool = False):
        super().__init__()
        self.recipe = recipe
        self.target = target
        self.extra_inputs = dict(extra_inputs)
        self.eight_bit = pixels or recipe.input_type == "uint8"
        order = [0, 1, 2] if recipe.channels == "rgb" else [2, 1, 0]
        mean = torch.tensor(recipe.mean, dtype=torch.float32)[order]
        std = torch.tensor(recipe.std, dtype=torch.float32)[order]
        # Divided, not multiplied by reciprocals: x / 255 is then the float the authors' ToTensor() gives, bit for bit.
        self.mean = mean[:, None, None] if bool(mean.any()) else None
        self.std = std[:, None, None] if bool((std != 1).any()) else None

    def batch_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        return len(sizes), 3, *self.target

    def forward(self, images: list[np.ndarray]) -> PreparedBatch:
        recipe, (height, width) = self.recipe, self.target
        placements = [placement(*image.shape[:2], self.target, recipe.resize, recipe.inset) for image in images]
        batch = torch.full((len(images), 3, height, width), float(recipe.pad_value), dtype=torch.float32)
        for slot, image, placed in zip(batch, images, placements):
            if recipe.resize == "pad_then_resize":  # padded first: the resize then samples the pad's edge too
                image = pad_to_square(image, recipe.pad_value)
            content = self._resized(image, placed)  # (3, h, w) float, RGB or BGR, 0-255
            slot[:, placed.top:placed.top + content.shape[1], placed.left:placed.left + content.shape[2]] = content
        if self.eight_bit:
            batch = batch.to(torch.uint8)
        else:
            if self.recipe.scale != 1.0:
                batch.div_(self.recipe.scale)
            if self.mean is not None:
                batch.sub_(self.mean)
            if self.std is not None:
                batch.div_(self.std)
        extra = {name: _extra_input(filler, [image.shape[:2] for image in images], placements, self.target)
                 for name, filler in self.extra_inputs.items()}
        return PreparedBatch(batch, extra, placements, [image.shape[:2] for image in images])

    def _resized(self, image: np.ndarray, placed: Placement) -> torch.Tensor:
        recipe = self.recipe
        planes = image if recipe.channels == "bgr" else image[..., ::-1]
        resized = placed.size != (image.shape[1], image.shape[0])
        if recipe.resampler == "opencv":
            if resized:
                planes = cv2.resize(np.ascontiguousarray(planes), placed.size,
                                    interpolation=OPENCV[recipe.interpolation])
            return torch.from_numpy(np.ascontiguousarray(planes).transpose(2, 0, 1)).float()
        if recipe.resampler == "pil":  # PIL's own filters (antialiased on a shrink), on the 8-bit image
            if resized:
                planes = np.asarray(Image.fromarray(np.ascontiguousarray(planes)).resize(
                    placed.size, PIL_FILTERS[recipe.interpolation]))
            return torch.from_numpy(np.ascontiguousarray(planes).transpose(2, 0, 1)).float()
        values = torch.from_numpy(np.ascontiguousarray(planes).transpose(2, 0, 1)).float()[None]
        if resized:  # torchvision's tensor resize: the float image, antialiased only where it says so
            mode, size = TORCH[recipe.interpolation], (placed.size[1], placed.size[0])
            smooth = {"antialias": True} if recipe.resampler == "torch_antialias" and mode in ANTIALIASED else {}
            values = F.adaptive_avg_pool2d(values, size) if mode == "area" else F.interpolate(
                values, size=size, mode=mode, **({} if mode == "nearest" else {"align_corners": False}), **smooth)
        return values[0]


class Restore(nn.Module):
    """Boxes from the input's pixels back to each original image, clipped to it; boxes the graph already gave in
    original pixels (`in_input=False`) are only clipped. `clip=False` leaves them as they fall, where the author's
    own predict does not clip (YOLOX's demo, D-FINE's, transformers' post-processing)."""

    def __init__(self, in_input: bool = True, clip: bool = True):
        super().__init__()
        self.in_input = in_input
        self.clip = clip

    def forward(self, detections: list[torch.Tensor], batch: PreparedBatch) -> list[torch.Tensor]:
        restored = []
        for found, placed, shape in zip(detections, batch.placements, batch.original_shapes):
            if self.in_input:
                found = found.clone()
                corners = found[:, :4]
                corners.sub_(corners.new_tensor([placed.left, placed.top, placed.left, placed.top]))
                corners.div_(corners.new_tensor([placed.scale_x, placed.scale_y, placed.scale_x, placed.scale_y]))
            restored.append(clip_boxes(found, shape) if self.clip else found)
        return restored
