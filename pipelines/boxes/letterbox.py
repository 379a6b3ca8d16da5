"""Letterbox resize: scale an image to fit a target shape, keep its aspect ratio, pad the rest.

Arithmetic follows the YOLOv7 reference pipeline so boxes map back exactly the same way: `letterbox` as its
detect.py deploys it, `evaluation_letterbox` as its test.py prepares images for mAP. Pad-then-resize
(`square_pad_geometry`, `pad_to_square`) pads first and resizes the square, as applications that build their
blob with OpenCV's dnn module do: the pad's edge is then resampled with the image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np

PAD_COLOR_BGR = (114, 114, 114)


@dataclass(frozen=True)
class LetterboxGeometry:
    """Where the resized image sits inside the letterboxed output."""

    ratio: float  # scale applied to both axes of the source image
    new_unpad: tuple[int, int]  # (w, h) of the resized content before padding
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    out_shape: tuple[int, int]  # (h, w) of the letterboxed output


def _as_hw(new_shape: int | tuple[int, int]) -> tuple[int, int]:
    if isinstance(new_shape, int):
        return new_shape, new_shape
    target_h, target_w = new_shape
    return int(target_h), int(target_w)


def _split_padding(total: float) -> tuple[int, int]:
    # The -0.1/+0.1 nudge gives the odd pixel to the bottom/right side, as the reference does.
    half = total / 2
    return int(round(half - 0.1)), int(round(half + 0.1))


def letterbox_geometry(
    h: int,
    w: int,
    new_shape: int | tuple[int, int],
    auto: bool,
    stride: int = 32,
    scaleup: bool = True,
) -> LetterboxGeometry:
    """Pure arithmetic of the letterbox for an h x w source and a target `new_shape` (int or (h, w)).

    `auto` pads only up to the next multiple of `stride` (minimal rectangle) instead of the full target;
    `scaleup=False` never enlarges the image.
    """
    if h <= 0 or w <= 0:
        raise ValueError(f"image size must be positive, got h={h}, w={w}")
    target_h, target_w = _as_hw(new_shape)
    ratio = min(target_h / h, target_w / w)
    if not scaleup:
        ratio = min(ratio, 1.0)
    # At least one pixel: a sliver of an image (1 x 5000) would otherwise resize to nothing, which OpenCV refuses.
    unpad_w, unpad_h = max(1, int(round(w * ratio))), max(1, int(round(h * ratio)))
    pad_w, pad_h = target_w - unpad_w, target_h - unpad_h
    if auto:
        pad_w, pad_h = pad_w % stride, pad_h % stride
    pad_top, pad_bottom = _split_padding(pad_h)
    pad_left, pad_right = _split_padding(pad_w)
    return LetterboxGeometry(
        ratio=ratio,
        new_unpad=(unpad_w, unpad_h),
        pad_top=pad_top,
        pad_bottom=pad_bottom,
        pad_left=pad_left,
        pad_right=pad_right,
        out_shape=(unpad_h + pad_top + pad_bottom, unpad_w + pad_left + pad_right),
    )


def resized_content(img: np.ndarray, geometry: LetterboxGeometry) -> np.ndarray:
    """The image at the letterbox's content size, before any padding (itself when it has that size already)."""
    if geometry.new_unpad == (img.shape[1], img.shape[0]):
        return img
    return cv2.resize(img, geometry.new_unpad, interpolation=cv2.INTER_LINEAR)


def letterbox(
    img: np.ndarray,
    new_shape: int | tuple[int, int],
    color: tuple[int, int, int] = PAD_COLOR_BGR,
    auto: bool = False,
    stride: int = 32,
    scaleup: bool = True,
) -> tuple[np.ndarray, LetterboxGeometry]:
    """Letterbox an HxWx3 uint8 BGR image; returns the padded image and its geometry."""
    h, w = img.shape[:2]
    geometry = letterbox_geometry(h, w, new_shape, auto=auto, stride=stride, scaleup=scaleup)
    padded = cv2.copyMakeBorder(
        resized_content(img, geometry),
        geometry.pad_top,
        geometry.pad_bottom,
        geometry.pad_left,
        geometry.pad_right,
        cv2.BORDER_CONSTANT,
        value=color,
    )
    return padded, geometry


@dataclass(frozen=True)
class SquarePad:
    """An h x w image padded at the bottom and right to a square of its longer side, then the square resized to
    the input: one scale per axis (the same one for a square input), the image at the top left, so a box maps
    back by the scales alone: (x / scale_x, y / scale_y)."""

    side: int  # the square's side: the image's longer side
    scale_x: float  # the input's width over the side
    scale_y: float  # the input's height over the side


def square_pad_geometry(h: int, w: int, target_hw: tuple[int, int]) -> SquarePad:
    """Pad-then-resize's arithmetic: the square of the longer side, resized to the target (h, w)."""
    if h <= 0 or w <= 0:
        raise ValueError(f"image size must be positive, got h={h}, w={w}")
    side = max(h, w)
    target_h, target_w = target_hw
    return SquarePad(side, target_w / side, target_h / side)


def pad_to_square(img: np.ndarray, pad_value: int) -> np.ndarray:
    """The image at the top left of a square of its longer side, the rest `pad_value` (itself when square)."""
    h, w = img.shape[:2]
    if h == w:
        return img
    return cv2.copyMakeBorder(img, 0, max(h, w) - h, 0, max(h, w) - w, cv2.BORDER_CONSTANT,
                              value=(pad_value,) * 3)


EVALUATION_PAD = 0.5  # test.py: each side of a batch's rectangle gets half a stride more than it needs


def evaluation_shape(sizes: Sequence[tuple[int, int]], img_size: int, stride: int = 32) -> tuple[int, int]:
    """test.py's (h, w) for a batch of images of these (h, w) sizes: one rectangle for the batch's aspect ratios
    (all landscape: as tall as the squarest of them; all portrait: as wide as the squarest; mixed: a square),
    each side ceil(side / stride + EVALUATION_PAD) strides."""
    aspects = [h / w for h, w in sizes]
    low, high = min(aspects), max(aspects)
    share_h, share_w = (high, 1.0) if high < 1 else (1.0, 1 / low) if low > 1 else (1.0, 1.0)
    return tuple(math.ceil(share * img_size / stride + EVALUATION_PAD) * stride for share in (share_h, share_w))


def evaluation_geometry(h: int, w: int, img_size: int, target_hw: tuple[int, int]) -> LetterboxGeometry:
    """test.py's geometry for an h x w source in its batch's rectangle: the long side resized to img_size (the
    other side truncated), centred, never scaled again. Boxes map back with the height's gain, as test.py's do."""
    if h <= 0 or w <= 0:
        raise ValueError(f"image size must be positive, got h={h}, w={w}")
    scale = img_size / max(h, w)
    unpad_w, unpad_h = max(1, int(w * scale)), max(1, int(h * scale))
    target_h, target_w = target_hw
    if unpad_h > target_h or unpad_w > target_w:
        raise ValueError(f"a {h}x{w} image resized to {unpad_h}x{unpad_w} does not fit its batch's {target_h}x{target_w}")
    pad_top, pad_bottom = _split_padding(target_h - unpad_h)
    pad_left, pad_right = _split_padding(target_w - unpad_w)
    return LetterboxGeometry(ratio=unpad_h / h, new_unpad=(unpad_w, unpad_h), pad_top=pad_top,
                             pad_bottom=pad_bottom, pad_left=pad_left, pad_right=pad_right,
                             out_shape=(target_h, target_w))


def evaluation_letterbox(img: np.ndarray, img_size: int, target_hw: tuple[int, int],
                         color: tuple[int, int, int] = PAD_COLOR_BGR) -> tuple[np.ndarray, LetterboxGeometry]:
    """test.py's letterbox for mAP (evaluation_geometry): shrinking resamples by pixel area, enlarging
    bilinearly, as its image loader does."""
    h, w = img.shape[:2]
    geometry = evaluation_geometry(h, w, img_size, target_hw)
    if geometry.new_unpad != (w, h):
        shrink = geometry.new_unpad[0] < w
        img = cv2.resize(img, geometry.new_unpad, interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    padded = cv2.copyMakeBorder(img, geometry.pad_top, geometry.pad_bottom, geometry.pad_left, geometry.pad_right,
                                cv2.BORDER_CONSTANT, value=color)
    return padded, geometry
