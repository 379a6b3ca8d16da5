"""Each layout's decoding into detections in input pixels: pure functions, tested against hand-computed boxes
(layouts.py says what each layout holds)."""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from pipelines.exported.layouts import Layout


def yolov8_as_yolov5(raw: torch.Tensor) -> torch.Tensor:
    """(B, 4 + C, N) -> (B, N, 5 + C) with an objectness of 1, so YOLO's NMS scores each row by its class score."""
    ones = raw.new_ones((raw.shape[0], 1, raw.shape[2]))
    return torch.cat((raw[:, :4], ones, raw[:, 4:]), dim=1).transpose(1, 2)


def cut_rows(rows: torch.Tensor, conf_thres: float, max_det: int, classes: Optional[Sequence[int]] = None,
             ) -> torch.Tensor:
    """(K, 6) x1 y1 x2 y2 score class rows above the cut (strictly), best first, at most max_det."""
    kept = rows[rows[:, 4] > conf_thres]
    if classes is not None:
        kept = kept[torch.isin(kept[:, 5].long(), torch.as_tensor(list(classes)))]
    order = torch.sort(kept[:, 4], descending=True, stable=True).indices[:max_det]
    return kept[order]


def normalised_cxcywh_to_xyxy(boxes: torch.Tensor, height: int, width: int) -> torch.Tensor:
    scale = boxes.new_tensor([width, height, width, height])
    cx, cy, w, h = (boxes * scale).unbind(-1)
    return torch.stack((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), dim=-1)


def query_rows(boxes: torch.Tensor, scores: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """One image's queries -> (Q, 6) rows: its boxes in input pixels, its best class's score and the class."""
    best, label = scores.max(dim=-1)
    return torch.cat((normalised_cxcywh_to_xyxy(boxes, height, width), best[:, None], label[:, None].to(boxes.dtype)),
                     dim=1)


def decode_queries(layout: Layout, outputs: Sequence[torch.Tensor], boxes_output: int, height: int,
                   width: int) -> list[torch.Tensor]:
    """The rows of a layout whose graph leaves one box per object, per image, before the score cut."""
    if layout == Layout.END2END:
        return [image.float() for image in outputs[0]]
    if layout == Layout.RTDETR:
        joined = outputs[0].float()
        return [query_rows(image[:, :4], image[:, 4:], height, width) for image in joined]
    boxes, logits = outputs[boxes_output].float(), outputs[1 - boxes_output].float()
    return [query_rows(b, l.sigmoid(), height, width) for b, l in zip(boxes, logits)]
