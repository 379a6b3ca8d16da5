"""Batch norms with statistics of their own, so that folding them is exercised (tests of models/fuse.py)."""
import torch
from torch import nn


def randomize_batchnorms(model: nn.Module, seed: int) -> None:
    """Non-trivial BN statistics, so that folding them is actually exercised."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                shape = module.running_mean.shape
                module.running_mean.copy_(torch.randn(shape, generator=generator) * 0.5)
                module.running_var.copy_(torch.rand(shape, generator=generator) * 2 + 0.5)
                module.weight.copy_(torch.rand(shape, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(shape, generator=generator) * 0.2)
