"""Inference-time simplification: BatchNorm folded into convolutions, RepConv branches summed into one conv.

The math is in pure functions on tensors; `fuse_model` only swaps modules.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from models.common import Conv, RepConv


def fold_batchnorm(weight: torch.Tensor, bias: torch.Tensor | None, bn: nn.BatchNorm2d
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Kernel and bias of one conv equal to conv(weight, bias) followed by `bn` in eval mode.

    bn(y) = gamma * (y - mean) / sqrt(var + eps) + beta, which is linear in y per output channel.
    """
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    conv_bias = torch.zeros_like(bn.running_mean) if bias is None else bias
    folded_weight = weight * scale.reshape(-1, *([1] * (weight.dim() - 1)))
    folded_bias = bn.bias + (conv_bias - bn.running_mean) * scale
    return folded_weight, folded_bias


def pad_to_kernel(weight: torch.Tensor, kernel_size: int) -> torch.Tensor:
    """A 1x1 kernel zero-padded to kernel_size x kernel_size, weight at the centre."""
    margin = (kernel_size - weight.shape[-1]) // 2
    return F.pad(weight, [margin] * 4)


def identity_kernel(channels: int, groups: int, kernel_size: int, like: torch.Tensor) -> torch.Tensor:
    """A (channels, channels // groups, k, k) kernel whose convolution returns its input unchanged."""
    per_group = channels // groups
    kernel = torch.zeros(channels, per_group, kernel_size, kernel_size, dtype=like.dtype, device=like.device)
    centre = kernel_size // 2
    for channel in range(channels):
        kernel[channel, channel % per_group, centre, centre] = 1
    return kernel


def repconv_kernel(dense: tuple[torch.Tensor, torch.Tensor], pointwise: tuple[torch.Tensor, torch.Tensor],
                   identity: tuple[torch.Tensor, torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum of the BN-folded branches (kxk, 1x1, identity-as-kxk) as one kxk kernel and bias."""
    kernel_size = dense[0].shape[-1]
    weight = dense[0] + pad_to_kernel(pointwise[0], kernel_size)
    bias = dense[1] + pointwise[1]
    if identity is not None:
        weight = weight + identity[0]
        bias = bias + identity[1]
    return weight, bias


def conv_with_bias(template: nn.Conv2d, weight: torch.Tensor, bias: torch.Tensor) -> nn.Conv2d:
    """A Conv2d with `template`'s geometry and the given kernel and bias."""
    conv = nn.Conv2d(template.in_channels, template.out_channels, template.kernel_size, template.stride,
                     template.padding, template.dilation, template.groups, bias=True,
                     padding_mode=template.padding_mode)
    conv = conv.to(device=weight.device, dtype=weight.dtype)
    conv.weight.copy_(weight)
    conv.bias.copy_(bias)
    return conv


def fuse_conv(module: Conv) -> None:
    folded = fold_batchnorm(module.conv.weight, module.conv.bias, module.bn)
    module.conv = conv_with_bias(module.conv, *folded)
    module.bn = None


def fuse_repconv(module: RepConv) -> None:
    dense_conv, dense_bn = module.rbr_dense
    pointwise_conv, pointwise_bn = module.rbr_1x1
    identity = None
    if module.rbr_identity is not None:
        unit = identity_kernel(dense_conv.in_channels, dense_conv.groups, dense_conv.kernel_size[0],
                               dense_conv.weight)
        identity = fold_batchnorm(unit, None, module.rbr_identity)
    weight, bias = repconv_kernel(fold_batchnorm(dense_conv.weight, None, dense_bn),
                                  fold_batchnorm(pointwise_conv.weight, None, pointwise_bn), identity)
    module.rbr_reparam = conv_with_bias(dense_conv, weight, bias)
    module.rbr_dense = module.rbr_1x1 = module.rbr_identity = None


def is_fused(model: nn.Module) -> bool:
    return any((isinstance(m, Conv) and m.bn is None) or (isinstance(m, RepConv) and m.rbr_reparam is not None)
               for m in model.modules())


def fuse_model(model: nn.Module) -> nn.Module:
    """In place: every Conv's BN folded into its conv, every RepConv re-parameterised. Returns `model`."""
    with torch.no_grad():
        for module in list(model.modules()):
            if isinstance(module, Conv) and module.bn is not None:
                fuse_conv(module)
            elif isinstance(module, RepConv) and module.rbr_reparam is None:
                fuse_repconv(module)
    for layer in getattr(model, "model", ()):
        layer.np = sum(p.numel() for p in layer.parameters())
    return model
