"""MediaPipe's SSD arithmetic (its BlazeFace face detectors): the anchors its SsdAnchorsCalculator generates, the
decode of its TensorsToDetectionsCalculator (centre, size and keypoints relative to each anchor, over fixed
scales), and its weighted non-maximum suppression (overlapping boxes blended, weighted by score). Pure functions on
tensors, tested against hand-computed cases."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class AnchorOptions:
    """SsdAnchorsCalculatorOptions, the fields a detector's graph sets (MediaPipe's defaults otherwise)."""

    input_height: int
    input_width: int
    strides: tuple[int, ...]
    min_scale: float = 0.1484375
    max_scale: float = 0.75
    anchor_offset_x: float = 0.5
    anchor_offset_y: float = 0.5
    aspect_ratios: tuple[float, ...] = (1.0,)
    interpolated_scale_aspect_ratio: float = 1.0
    fixed_anchor_size: bool = True
    reduce_boxes_in_lowest_layer: bool = False


def _scale(options: AnchorOptions, index: int) -> float:
    count = len(options.strides)
    if count == 1:
        return (options.min_scale + options.max_scale) / 2
    return options.min_scale + (options.max_scale - options.min_scale) * index / (count - 1)


def ssd_anchors(options: AnchorOptions) -> torch.Tensor:
    """(A, 4) anchors of x centre, y centre, width, height, normalised to the input, in MediaPipe's order: layers of
    one stride grouped, then rows, columns, and the anchors of each cell."""
    anchors, layer, count = [], 0, len(options.strides)
    while layer < count:
        sizes = []  # (height, width) of each anchor of a cell
        last = layer
        while last < count and options.strides[last] == options.strides[layer]:
            scale = _scale(options, last)
            if last == 0 and options.reduce_boxes_in_lowest_layer:
                cell = [(1.0, 0.1), (2.0, scale), (0.5, scale)]
            else:
                cell = [(ratio, scale) for ratio in options.aspect_ratios]
                if options.interpolated_scale_aspect_ratio > 0:
                    following = 1.0 if last == count - 1 else _scale(options, last + 1)
                    cell.append((options.interpolated_scale_aspect_ratio, math.sqrt(scale * following)))
            sizes += [(size / math.sqrt(ratio), size * math.sqrt(ratio)) for ratio, size in cell]
            last += 1
        stride = options.strides[layer]
        rows, cols = math.ceil(options.input_height / stride), math.ceil(options.input_width / stride)
        for y in range(rows):
            for x in range(cols):
                for height, width in sizes:
                    anchors.append((
                        (x + options.anchor_offset_x) / cols, (y + options.anchor_offset_y) / rows,
                        1.0 if options.fixed_anchor_size else width, 1.0 if options.fixed_anchor_size else height))
        layer = last
    return torch.tensor(anchors, dtype=torch.float32)


def decode_boxes(raw: torch.Tensor, anchors: torch.Tensor, scale_xy: tuple[float, float],
                 scale_wh: tuple[float, float]) -> torch.Tensor:
    """(..., A, 4 + 2K) raw values x, y, w, h, then K keypoints' x, y (MediaPipe's reverse_output_order) ->
    (..., A, 4 + 2K) x1, y1, x2, y2 and the keypoints, normalised to the input: centre and keypoints as offsets
    over `scale_xy` times the anchor's size from its centre, the size over `scale_wh` times the anchor's."""
    x_scale, y_scale = scale_xy
    w_scale, h_scale = scale_wh
    ax, ay, aw, ah = anchors.unbind(-1)
    x = raw[..., 0] / x_scale * aw + ax
    y = raw[..., 1] / y_scale * ah + ay
    half_w = raw[..., 2] / w_scale * aw / 2
    half_h = raw[..., 3] / h_scale * ah / 2
    points = raw[..., 4:].reshape(*raw.shape[:-1], -1, 2)
    keypoints = torch.stack((points[..., 0] / x_scale * aw[..., None] + ax[..., None],
                             points[..., 1] / y_scale * ah[..., None] + ay[..., None]), dim=-1)
    corners = torch.stack((x - half_w, y - half_h, x + half_w, y + half_h), dim=-1)
    return torch.cat((corners, keypoints.flatten(-2)), dim=-1)


def clipped_sigmoid(logits: torch.Tensor, limit: float) -> torch.Tensor:
    """Scores as MediaPipe's decode gives them: the raw score clipped to [-limit, limit], then its sigmoid."""
    return torch.sigmoid(logits.clamp(-limit, limit))


def iou_with(box: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
    """IoU of one x1, y1, x2, y2 box with each of (N, 4); 0 where they do not overlap or a box has no area."""
    width = (torch.minimum(box[2], boxes[:, 2]) - torch.maximum(box[0], boxes[:, 0]))
    height = (torch.minimum(box[3], boxes[:, 3]) - torch.maximum(box[1], boxes[:, 1]))
    overlaps = (width > 0) & (height > 0)
    inter = torch.where(overlaps, width * height, torch.zeros_like(width))

    def area(b: torch.Tensor) -> torch.Tensor:
        w, h = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
        return torch.where((w > 0) & (h > 0), w * h, torch.zeros_like(w))

    union = area(box) + area(boxes) - inter
    return torch.where(overlaps & (union > 0), inter / union.clamp(min=1e-30), torch.zeros_like(inter))


def weighted_nms(values: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> tuple[torch.Tensor,
                                                                                           torch.Tensor]:
    """MediaPipe's weighted non-maximum suppression over one image's candidates: (N, 4 + V) x1, y1, x2, y2 and
    further values (keypoints), (N,) scores. The best remaining candidate takes every remaining one whose IoU with
    it exceeds the threshold (itself included) and becomes their score-weighted mean, keeping its own score; the
    rest go on. Returns the (M, 4 + V) blended values and their (M,) scores, best first. A candidate without area
    overlaps nothing, itself included: it ends the suppression, as MediaPipe's loop stops when nothing was taken."""
    order = torch.sort(scores, descending=True, stable=True).indices
    remaining, kept_values, kept_scores = order, [], []
    while len(remaining):
        top = remaining[0]
        similar = iou_with(values[top, :4], values[remaining, :4]) > iou_threshold
        taken = remaining[similar]
        if len(taken):
            weights = scores[taken]
            kept_values.append((values[taken] * weights[:, None]).sum(dim=0) / weights.sum())
        else:
            kept_values.append(values[top])
        kept_scores.append(scores[top])
        if not len(taken):
            break
        remaining = remaining[~similar]
    if not kept_values:
        return values.new_zeros((0, values.shape[1])), scores.new_zeros(0)
    return torch.stack(kept_values), torch.stack(kept_scores)
