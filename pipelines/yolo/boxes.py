"""Box format conversion and mapping boxes from letterbox space back to the source image."""

from __future__ import annotations

import torch

from pipelines.yolo.letterbox import LetterboxGeometry


def xywh_to_xyxy(boxes_xywh: torch.Tensor) -> torch.Tensor:
    """(..., 4) centre-x, centre-y, width, height -> (..., 4) x1, y1, x2, y2 (new tensor)."""
    centre = boxes_xywh[..., :2]
    half_size = boxes_xywh[..., 2:4] / 2
    return torch.cat((centre - half_size, centre + half_size), dim=-1)


def clip_boxes(boxes: torch.Tensor, shape_hw: tuple[int, int]) -> torch.Tensor:
    """Clamp xyxy coordinates (first 4 columns) into an image of shape (h, w); returns a new tensor."""
    height, width = shape_hw
    clipped = boxes.clone()
    clipped[..., [0, 2]] = clipped[..., [0, 2]].clamp(0, width)
    clipped[..., [1, 3]] = clipped[..., [1, 3]].clamp(0, height)
    return clipped


def scale_boxes_to_original(
    boxes_xyxy: torch.Tensor,
    geometry: LetterboxGeometry,
    original_shape_hw: tuple[int, int],
) -> torch.Tensor:
    """Map xyxy boxes from letterbox space to the source image: remove padding, undo the scale, clip.

    Only the first 4 columns are changed, so (n, 6) detections can be passed whole. Returns a new tensor.
    """
    scaled = boxes_xyxy.clone()
    scaled[..., [0, 2]] -= geometry.pad_left
    scaled[..., [1, 3]] -= geometry.pad_top
    scaled[..., :4] /= geometry.ratio
    return clip_boxes(scaled, original_shape_hw)
