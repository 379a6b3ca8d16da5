"""Box format conversion, IoU, and mapping boxes from letterbox space back to the source image."""

from __future__ import annotations

import torch

from utils.letterbox import LetterboxGeometry


def xywh_to_xyxy(boxes_xywh: torch.Tensor) -> torch.Tensor:
    """(..., 4) centre-x, centre-y, width, height -> (..., 4) x1, y1, x2, y2 (new tensor)."""
    centre = boxes_xywh[..., :2]
    half_size = boxes_xywh[..., 2:4] / 2
    return torch.cat((centre - half_size, centre + half_size), dim=-1)


def box_iou(boxes_a: torch.Tensor, boxes_b: torch.Tensor) -> torch.Tensor:
    """Pairwise IoU of (N, 4) and (M, 4) xyxy boxes -> (N, M); 0 where both boxes have no area."""
    area_a = (boxes_a[:, 2] - boxes_a[:, 0]).clamp(min=0) * (boxes_a[:, 3] - boxes_a[:, 1]).clamp(min=0)
    area_b = (boxes_b[:, 2] - boxes_b[:, 0]).clamp(min=0) * (boxes_b[:, 3] - boxes_b[:, 1]).clamp(min=0)
    top_left = torch.maximum(boxes_a[:, None, :2], boxes_b[None, :, :2])
    bottom_right = torch.minimum(boxes_a[:, None, 2:4], boxes_b[None, :, 2:4])
    overlap_wh = (bottom_right - top_left).clamp(min=0)
    intersection = overlap_wh[..., 0] * overlap_wh[..., 1]
    union = area_a[:, None] + area_b[None, :] - intersection
    return torch.where(union > 0, intersection / union, 0.0)


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
