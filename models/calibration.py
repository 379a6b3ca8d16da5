"""BatchNorm statistics measured on real images, for networks that run on random weights.

A freshly initialised network keeps BatchNorm's default statistics (mean 0, variance 1), which do not match
what its random convolutions produce: activations shrink layer after layer and every candidate ends up with
nearly the same score, bias alone. Then scores tie far below float32 precision and no comparison of two
runtimes' detections can mean anything. Measuring each BatchNorm's input statistics on a few real images
keeps activations at unit scale, so scores spread as they do in a trained network. Timings are unaffected.
"""
from __future__ import annotations

import torch
from torch import nn


def calibrate_batchnorm(model: nn.Module, batch: torch.Tensor) -> int:
    """Set every BatchNorm2d's running mean and variance to those of its input on `batch` (one forward in
    training mode, cumulative averaging); the model is left in eval mode. Returns how many were set."""
    layers = [module for module in model.modules() if isinstance(module, nn.BatchNorm2d)]
    momenta = [layer.momentum for layer in layers]
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None  # a cumulative average: after one batch, exactly that batch's statistics
    model.train()
    try:
        with torch.no_grad():
            model(batch)
    finally:
        for layer, momentum in zip(layers, momenta):
            layer.momentum = momentum
        model.eval()
    return len(layers)
