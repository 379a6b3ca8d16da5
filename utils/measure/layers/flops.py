"""Multiply-accumulates (MACs) and FLOPs of one module call, from the shapes that call really saw.

Conventions (the ones behind the YOLO world's "GFLOPs"):
- Conv and Linear count one MAC per weight-times-input product; bias adds are not MACs.
- FLOPs = 2 x MACs (one multiply plus one add each).
- BatchNorm counts 0: deployed detectors fold it into the preceding convolution, and the published
  YOLOv7 figures (104.7 GFLOPs at 640) are for that folded model. Activations, pooling, upsampling and
  concatenation count 0 as well, so the figures compare with published ones rather than with the
  elementwise work a CPU really does.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from torch import nn

Shape = Sequence[int]

_CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_TRANSPOSED_CONVOLUTIONS = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)


def numel(shape: Shape) -> int:
    return math.prod(shape)


def conv_macs(output_shape: Shape, in_channels: int, groups: int, kernel_size: Sequence[int]) -> int:
    """Each output element is a dot product over (in_channels / groups) x kernel taps."""
    return numel(output_shape) * (in_channels // groups) * math.prod(kernel_size)


def conv_transpose_macs(input_shape: Shape, out_channels: int, groups: int, kernel_size: Sequence[int]) -> int:
    """Each input element is scattered onto (out_channels / groups) x kernel taps."""
    return numel(input_shape) * (out_channels // groups) * math.prod(kernel_size)


def linear_macs(output_shape: Shape, in_features: int) -> int:
    return numel(output_shape) * in_features


def achieved_gflops_per_s(flops: float, seconds: float) -> float | None:
    """None when there is nothing to divide (no FLOPs counted or no time measured)."""
    if flops <= 0 or seconds <= 0:
        return None
    return flops / seconds / 1e9


def _is_shape(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(size, int) for size in value)


def macs_rule(module: nn.Module) -> tuple[str, int] | None:
    """("output" or "input", MACs per element of that tensor) for a module whose MACs scale with one tensor's
    size; None for modules counted as 0. Applying it per call costs one numel()."""
    if isinstance(module, _TRANSPOSED_CONVOLUTIONS):
        return "input", (module.out_channels // module.groups) * math.prod(module.kernel_size)
    if isinstance(module, _CONVOLUTIONS):
        return "output", (module.in_channels // module.groups) * math.prod(module.kernel_size)
    if isinstance(module, nn.Linear):
        return "output", module.in_features
    return None


def module_macs(module: nn.Module, input_shapes: Sequence[Any] | None, output_shapes: Any) -> int:
    """MACs of one call of `module` (its own work, not its children's).

    `input_shapes` holds one entry per positional argument (a shape for a tensor argument);
    `output_shapes` is the output's shape. Unknown module types and unusable shapes give 0.
    """
    if isinstance(module, _TRANSPOSED_CONVOLUTIONS):
        if not input_shapes or not _is_shape(input_shapes[0]):
            return 0
        return conv_transpose_macs(input_shapes[0], module.out_channels, module.groups, module.kernel_size)
    if not _is_shape(output_shapes):
        return 0
    if isinstance(module, _CONVOLUTIONS):
        return conv_macs(output_shapes, module.in_channels, module.groups, module.kernel_size)
    if isinstance(module, nn.Linear):
        return linear_macs(output_shapes, module.in_features)
    return 0
