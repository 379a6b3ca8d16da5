"""The arithmetic the layouts decode with: pure functions on tensors, tested against hand-computed boxes (each
layout module in layouts/ says which it applies, in which order)."""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from pipelines.boxes.conversions import xywh_to_xyxy
from pipelines.settings import cap

PAD_SCORE = -1.0  # a padding row's score: below every cut, so no padding row is ever kept


def yolov8_as_yolov5(raw: torch.Tensor) -> torch.Tensor:
    """(B, 4 + C, N) -> (B, N, 5 + C) with an objectness of 1, so YOLO's NMS scores each row by its class score."""
    ones = raw.new_ones((raw.shape[0], 1, raw.shape[2]))
    return torch.cat((raw[:, :4], ones, raw[:, 4:]), dim=1).transpose(1, 2)


def yolov8_rows_passing(raw: torch.Tensor, conf_thres: float) -> list[torch.Tensor]:
    """Per image, the rows of yolov8_as_yolov5(raw) that NMS goes on with: those whose best class score is not at
    or below a non-negative cut (a NaN row goes on, as NMS's own test lets it), every row under a negative one.
    Found on (4 + C, N) itself, so the thousands of rows that cannot pass are never copied."""
    images = []
    for image in raw:
        if conf_thres >= 0:
            image = image[:, ~(image[4:].amax(dim=0) <= conf_thres)]
        images.append(torch.cat((image[:4], image.new_ones((1, image.shape[1])), image[4:])).T)
    return images


def with_objectness(boxes_cxcywh: torch.Tensor, scores: torch.Tensor,
                    objectness: Optional[torch.Tensor] = None) -> torch.Tensor:
    """(B, N, 4) boxes and (B, N, C) class scores -> (B, N, 5 + C), objectness 1 where the layout has none."""
    if objectness is None:
        objectness = scores.new_ones(scores.shape[:-1])
    return torch.cat((boxes_cxcywh, objectness[..., None], scores), dim=-1)


def normalised_cxcywh_to_xyxy(boxes: torch.Tensor, height: int, width: int) -> torch.Tensor:
    return xywh_to_xyxy(boxes * boxes.new_tensor([width, height, width, height]))


def rows(boxes_xyxy: torch.Tensor, scores: torch.Tensor, classes: torch.Tensor) -> torch.Tensor:
    """(..., K, 4), (..., K), (..., K) -> (..., K, 6) x1 y1 x2 y2 score class."""
    return torch.cat((boxes_xyxy.float(), scores.float()[..., None], classes.to(torch.float32)[..., None]), dim=-1)


def best_class_rows(boxes_xyxy: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """One row per query: its best class and that class's score ((B, Q, 4), (B, Q, C) -> (B, Q, 6))."""
    best, label = scores.max(dim=-1)
    return rows(boxes_xyxy, best, label)


def top_pairs(boxes_xyxy: torch.Tensor, scores: torch.Tensor, k: int) -> torch.Tensor:
    """The k best (query, class) pairs of each image, as RF-DETR and D-FINE select: a query may appear under
    several classes ((B, Q, 4), (B, Q, C) -> (B, min(k, Q x C), 6), best first)."""
    batch, queries, classes = scores.shape
    best, index = scores.reshape(batch, queries * classes).topk(min(k, queries * classes), dim=1)
    query, label = index // classes, index % classes
    chosen = torch.gather(boxes_xyxy, 1, query[..., None].expand(-1, -1, 4))
    return rows(chosen, best, label)


def padded(images: Sequence[torch.Tensor], width: int = 6) -> torch.Tensor:
    """Per-image row sets of different lengths as one (B, K, width) tensor, short ones padded with PAD_SCORE rows."""
    longest = max((len(image) for image in images), default=0)
    out = torch.zeros((len(images), longest, width))
    out[..., 4] = PAD_SCORE
    for slot, image in zip(out, images):
        slot[:len(image)] = image
    return out


def cut_rows(rows_: torch.Tensor, conf_thres: float, max_det: int, classes: Optional[Sequence[int]] = None,
             ) -> torch.Tensor:
    """(K, 6) x1 y1 x2 y2 score class rows above the cut (strictly), best first, at most max_det (all for
    NO_CAP)."""
    kept = rows_[rows_[:, 4] > conf_thres]
    if classes is not None:
        kept = kept[torch.isin(kept[:, 5].long(), torch.as_tensor(list(classes)))]
    order = torch.sort(kept[:, 4], descending=True, stable=True).indices[:cap(max_det)]
    return kept[order]


def grid_points(height: int, width: int, strides: Sequence[int], offset: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Every stride's grid cells, row by row, stride after stride: (N, 2) cell x, y (plus `offset` of a cell) and
    (N,) the stride of each; a partial last cell counts (ceil), as the convolutions' output sizes do."""
    points, cell_strides = [], []
    for stride in strides:
        rows_, cols = -(-height // stride), -(-width // stride)
        y, x = torch.meshgrid(torch.arange(rows_, dtype=torch.float32), torch.arange(cols, dtype=torch.float32),
                              indexing="ij")
        points.append(torch.stack((x.reshape(-1), y.reshape(-1)), dim=1) + offset)
        cell_strides.append(torch.full((rows_ * cols,), float(stride)))
    return torch.cat(points), torch.cat(cell_strides)


def distribution_distances(logits: torch.Tensor, bins: int) -> torch.Tensor:
    """(..., 4 x bins) unnormalised distributions over 0 .. bins - 1 (GFL's DFL: left, top, right, bottom) ->
    (..., 4) expected distances, in strides."""
    probabilities = logits.reshape(*logits.shape[:-1], 4, bins).softmax(dim=-1)
    return (probabilities * torch.arange(bins, dtype=probabilities.dtype)).sum(dim=-1)


def distances_to_xyxy(centres: torch.Tensor, distances: torch.Tensor) -> torch.Tensor:
    """Centres (N, 2) and (B, N, 4) left, top, right, bottom distances -> (B, N, 4) x1 y1 x2 y2."""
    return torch.cat((centres - distances[..., :2], centres + distances[..., 2:]), dim=-1)
