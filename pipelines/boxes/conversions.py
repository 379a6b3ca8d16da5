"""Box format conversion and mapping boxes from letterbox space back to the source image."""

from __future__ import annotations

import torch

from pipelines.boxes.letterbox import LetterboxGeometry


def xywh_to_xyxy(boxes_xywh: torch.Tensor) -> torch.Tensor:
    """(..., 4) centre-x, centre-y, width, height -> (..., 4) x1, y1, x2, y2 (new tensor)."""
    centre = boxes_xywh[..., :2]
    half_size = boxes_xywh[..., 2:4] / 2
    return torch.cat((centre - half_size, centre + half_size), dim=-1)


def xyxy_to_xywh(boxes_xyxy: torch.Tensor) -> torch.Tensor:
    """(..., 4) x1, y1, x2, y2 -> (..., 4) centre-x, centre-y, width, height (new tensor)."""
    x1, y1, x2, y2 = boxes_xyxy.unbind(-1)
    return torch.stack(((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1), dim=-1)


def _clip_corners_(corners: torch.Tensor, shape_hw: tuple[int, int]) -> None:
    """Clamp the (..., 4) xyxy corners into an image of shape (h, w), in place."""
    height, width = shape_hw
    corners.clamp_(min=0).clamp_(max=corners.new_tensor([width, height, width, height]))


def clip_boxes(boxes: torch.Tensor, shape_hw: tuple[int, int]) -> torch.Tensor:
    """Clamp xyxy coordinates (first 4 columns) into an image of shape (h, w); returns a new tensor."""
    clipped = boxes.clone()
    _clip_corners_(clipped[..., :4], shape_hw)
    return clipped


def scale_boxes_to_original(
    boxes_xyxy: torch.Tensor,
    geometry: LetterboxGeometry,
    original_shape_hw: tuple[int, int],
) -> torch.Tensor:
    """Map xyxy boxes from letterbox space to the source image: remove padding, undo the scale, clip.

    Only the first 4 columns are changed, so (n, 6) detections can be passed whole. Returns a new tensor.
    """
    # Whole-row operations on the corners, not indexed column pairs: each indexed update was a gather and a
    # scatter, and beside another stream's inference these small operations cost several times their idle time.
    scaled = boxes_xyxy.clone()
    corners = scaled[..., :4]
    padding = corners.new_tensor([geometry.pad_left, geometry.pad_top, geometry.pad_left, geometry.pad_top])
    corners.sub_(padding).div_(geometry.ratio)
    _clip_corners_(corners, original_shape_hw)
    return scaled
