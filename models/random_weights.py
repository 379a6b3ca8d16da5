"""Random weights that behave like trained ones where a benchmark can tell: statistics measured on real images.

A freshly initialised network keeps BatchNorm's default statistics (mean 0, variance 1), which do not match
what its random convolutions produce: activations shrink layer after layer and every candidate ends up with
nearly the same score, bias alone. Then scores tie far below float32 precision and no comparison of two
runtimes' detections can mean anything. Measuring each BatchNorm's input statistics on a few real images
keeps activations at unit scale, so scores spread as they do in a trained network.

That alone still leaves YOLO's Detect head unlike a trained one: its box logits are spread widely, so boxes
land anywhere, and hundreds of overlapping candidates per image clear the score threshold with near-equal
scores. NMS then picks among near-ties, and two runtimes whose raw outputs agree to 1e-4 keep different
boxes. `calibrate_detect_head` centres each box logit near its anchor and shifts the scores so that about
as many candidates clear the threshold as with trained weights. Timings are unaffected by any of this.
"""
from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence

import torch
from torch import nn

BOX_LOGIT_STD = 0.25  # box logits' spread after calibration: boxes vary around their anchor near the cell centre
CONF_THRES = 0.25  # the score threshold the candidate count is aimed at (YOLOv7's default)
CANDIDATE_SHARE = 40 / 25200  # ~40 candidates over CONF_THRES among yolov7's 25200 rows at 640x640


def calibrate_batchnorm(model: nn.Module, batch: torch.Tensor) -> Any:
    """Set every BatchNorm2d's running mean and variance to those of its input on `batch` (one forward in
    training mode, cumulative averaging); the model is left in eval mode. Returns that forward's output."""
    layers = [module for module in model.modules() if isinstance(module, nn.BatchNorm2d)]
    momenta = [layer.momentum for layer in layers]
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None  # a cumulative average: after one batch, exactly that batch's statistics
    model.train()
    try:
        with torch.no_grad():
            return model(batch)
    finally:
        for layer, momentum in zip(layers, momenta):
            layer.momentum = momentum
        model.eval()


def candidate_counts(level_maps: Sequence[torch.Tensor], shift: float, conf: float = CONF_THRES) -> torch.Tensor:
    """Per image, how many rows of Detect's raw per-level maps (B, na, ny, nx, 5 + nc) would clear `conf` with
    `shift` added to the objectness and class logits: objectness > conf and objectness x best class > conf."""
    total = None
    for raw in level_maps:
        obj = (raw[..., 4] + shift).sigmoid()
        best = (raw[..., 5:] + shift).sigmoid().amax(-1)
        count = ((obj > conf) & (obj * best > conf)).flatten(1).sum(1)
        total = count if total is None else total + count
    return total


def bisect_shift(median_count: Callable[[float], float], target: float, low: float = -30.0, high: float = 30.0,
                 steps: int = 60) -> float:
    """The smallest shift (to within (high - low) / 2**steps) at which the non-decreasing `median_count` reaches
    `target`; `high` when even it does not."""
    if median_count(low) >= target:
        return low
    if median_count(high) < target:
        return high
    for _ in range(steps):
        middle = (low + high) / 2
        if median_count(middle) >= target:
            high = middle
        else:
            low = middle
    return high


def calibrate_detect_head(detect: nn.Module, level_maps: Sequence[torch.Tensor], target: float,
                          conf: float = CONF_THRES, box_logit_std: float = BOX_LOGIT_STD) -> float:
    """In place on Detect's output convs (`detect.m`, `detect.na` anchors of `detect.no` values), from its raw
    per-level maps on the calibration images: every box logit rescaled through its conv's weights and bias to
    mean 0 and standard deviation `box_logit_std`, then one shift added to every objectness and class bias so
    that the median image has `target` candidates over `conf`. Returns the shift."""
    with torch.no_grad():
        for conv, raw in zip(detect.m, level_maps):
            boxes = raw[..., :4].transpose(0, 1).reshape(detect.na, -1, 4)  # (anchor, every cell of every image, xywh)
            gain = box_logit_std / boxes.std(dim=1).clamp_min(1e-12)
            weight = conv.weight.view(detect.na, detect.no, -1)
            bias = conv.bias.view(detect.na, detect.no)
            weight[:, :4] *= gain[..., None]
            bias[:, :4] = (bias[:, :4] - boxes.mean(dim=1)) * gain
        shift = bisect_shift(lambda s: float(statistics.median(candidate_counts(level_maps, s, conf).tolist())),
                             target)
        for conv in detect.m:
            conv.bias.view(detect.na, detect.no)[:, 4:] += shift
    return shift


def candidate_target(level_maps: Sequence[torch.Tensor], share: float = CANDIDATE_SHARE) -> float:
    """How many candidates per image a trained detector typically keeps, for maps of this size."""
    rows = sum(raw[0, ..., 0].numel() for raw in level_maps)
    return max(1.0, round(rows * share, 1))
