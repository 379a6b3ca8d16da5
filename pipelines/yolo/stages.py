"""YOLO's pre- and post-processing transforms: letterbox to a batch tensor, NMS, boxes back to the originals.

Each is an nn.Module so that per-layer timing attaches from outside with ordinary forward hooks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import cv2
import numpy as np
import torch
from torch import nn

from pipelines.boxes.conversions import scale_boxes_to_original
from pipelines.boxes.letterbox import (LetterboxGeometry, evaluation_letterbox, evaluation_shape, letterbox_geometry,
                                      resized_content)

PIXEL_SCALE = 255.0  # the network's float input is each RGB pixel value over this


@dataclass
class PreprocessedBatch:
    tensor: torch.Tensor
    geometries: list[LetterboxGeometry]
    original_shapes: list[tuple[int, int]]


class Preprocess(nn.Module):
    """Letterbox each BGR image, then stack as RGB CHW float in [0, 1], or with `pixels` as the uint8 values
    themselves, for a runtime that converts them inside its own graph (PreparedForward.input_dtype).

    With `rect` every image gets its own minimal stride-multiple rectangle; a batch of differently shaped
    rectangles is padded at the bottom and right to the largest, which leaves each image's letterbox
    geometry (and so the box mapping back) unchanged. With `evaluation`, YOLOv7's test.py letterbox for mAP
    instead: one rectangle per batch, each image centred in it (letterbox.evaluation_letterbox).
    """

    def __init__(self, img_size: int, rect: bool, pad_value: int, stride: int, evaluation: bool = False,
                 pixels: bool = False):
        super().__init__()
        self.img_size = img_size
        self.rect = rect
        self.pad_value = pad_value
        # The padding as the conversion turns it into a float, so a padded slot holds the same value bit for bit.
        self.pad_unit = pad_value if pixels else torch.tensor(pad_value, dtype=torch.uint8).div(PIXEL_SCALE).item()
        self.stride = stride
        self.evaluation = evaluation
        self.pixels = pixels

    def batch_shape(self, sizes: Sequence[tuple[int, int]]) -> tuple[int, int, int, int]:
        """(B, 3, H, W) of the tensor `forward` makes of images of these (height, width) sizes."""
        if self.evaluation:
            return (len(sizes), 3, *evaluation_shape(sizes, self.img_size, self.stride))
        shapes = [letterbox_geometry(h, w, self.img_size, auto=self.rect, stride=self.stride).out_shape
                  for h, w in sizes]
        return len(shapes), 3, max(h for h, _ in shapes), max(w for _, w in shapes)

    def forward(self, images: list[np.ndarray]) -> PreprocessedBatch:
        if self.evaluation:
            height, width = evaluation_shape([image.shape[:2] for image in images], self.img_size, self.stride)
            boxed = [evaluation_letterbox(image, self.img_size, (height, width), (self.pad_value,) * 3)
                     for image in images]
            geometries = [geometry for _, geometry in boxed]
            placed = [(canvas, 0, 0) for canvas, _ in boxed]
        else:
            # Each image is resized and written straight into its place in the batch, the padding around it as
            # floats: no bordered uint8 copy of the whole canvas first (letterbox() makes that copy).
            geometries = [letterbox_geometry(*image.shape[:2], self.img_size, auto=self.rect, stride=self.stride)
                          for image in images]
            placed = [(resized_content(image, geometry), geometry.pad_top, geometry.pad_left)
                      for image, geometry in zip(images, geometries)]
            height = max(geometry.out_shape[0] for geometry in geometries)
            width = max(geometry.out_shape[1] for geometry in geometries)
        # One pass per channel plane, u8 in, float out, in its place: a third less time than flipping and
        # transposing the uint8 batch, then converting, then dividing. torch.div of a uint8 tensor by 255.0 is
        # float32(x) / 255 as .float().div_(255.0) is, bit for bit.
        tensor = torch.empty((len(placed), 3, height, width), dtype=torch.uint8 if self.pixels else torch.float32)
        for slot, (content, top, left) in zip(tensor, placed):
            h, w = content.shape[:2]
            self._pad_around(slot, top, left, h, w)
            for channel, plane in enumerate(reversed(cv2.split(content))):  # BGR planes, written as RGB
                place = slot[channel, top:top + h, left:left + w]
                if self.pixels:
                    place.copy_(torch.from_numpy(plane))
                else:
                    torch.div(torch.from_numpy(plane), PIXEL_SCALE, out=place)
        return PreprocessedBatch(tensor, geometries, [image.shape[:2] for image in images])

    def _pad_around(self, slot: torch.Tensor, top: int, left: int, h: int, w: int) -> None:
        """The padding value everywhere in a (3, H, W) slot but the h x w content at (top, left)."""
        slot[:, :top].fill_(self.pad_unit)
        slot[:, top + h:].fill_(self.pad_unit)
        slot[:, top:top + h, :left].fill_(self.pad_unit)
        slot[:, top:top + h, left + w:].fill_(self.pad_unit)


class ScaleBoxes(nn.Module):
    """Map boxes from letterboxed input pixels back to each original image, clipped to it."""

    def forward(self, detections: list[torch.Tensor], batch: PreprocessedBatch) -> list[torch.Tensor]:
        return [scale_boxes_to_original(det, geometry, shape)  # a new tensor; score and class columns kept
                for det, geometry, shape in zip(detections, batch.geometries, batch.original_shapes)]
