"""MAC counting: hand-computed cases, a ones-convolution reference, torch's FlopCounterMode, YOLOv7 totals."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from utils.measure.layers.flops import achieved_gflops_per_s, conv_macs, conv_transpose_macs, linear_macs, module_macs
from utils.measure.layers.model_timing import ModelTiming, shapes_of
from utils.record.layers import flops_from_macs


def macs_of_call(module: nn.Module, x: torch.Tensor) -> int:
    return module_macs(module, shapes_of((x,)), shapes_of(module(x)))


def test_hand_computed_cases():
    # 8 output channels on a 4x4 map, each a 3x3 dot product over 3 input channels.
    assert conv_macs([1, 8, 4, 4], in_channels=3, groups=1, kernel_size=(3, 3)) == 8 * 16 * 27
    # Depthwise: one input channel per output channel.
    assert conv_macs([2, 16, 5, 5], in_channels=16, groups=16, kernel_size=(3, 3)) == 2 * 16 * 25 * 9
    assert conv_transpose_macs([1, 4, 5, 5], out_channels=6, groups=2, kernel_size=(3, 3)) == 100 * 3 * 9
    assert linear_macs([3, 7], in_features=5) == 3 * 7 * 5
    assert flops_from_macs(10) == 20


def test_achieved_gflops_per_s():
    assert achieved_gflops_per_s(4e9, 2.0) == pytest.approx(2.0)
    assert achieved_gflops_per_s(0, 1.0) is None
    assert achieved_gflops_per_s(1e9, 0) is None


def ones_conv_reference(module: nn.Conv2d, x: torch.Tensor) -> int:
    """Products a dense convolution performs: convolve ones (padding counted as taps) with ones, sum."""
    pad_h, pad_w = module.padding
    padded = F.pad(torch.ones_like(x), (pad_w, pad_w, pad_h, pad_h), value=1.0)
    weight = torch.ones_like(module.weight, dtype=torch.float64)
    out = F.conv2d(padded.double(), weight, None, module.stride, 0, module.dilation, module.groups)
    return int(out.sum().item())


@pytest.mark.parametrize("in_ch, out_ch, kernel, stride, padding, groups, dilation",
                         [(4, 6, 3, 2, 1, 1, 1), (4, 8, 3, 1, 0, 2, 1), (6, 6, 5, 1, 2, 6, 1), (3, 5, 3, 1, 2, 1, 2),
                          (8, 4, 1, 1, 0, 1, 1)])
def test_conv2d_against_ones_reference_and_flop_counter(in_ch, out_ch, kernel, stride, padding, groups, dilation):
    conv = nn.Conv2d(in_ch, out_ch, kernel, stride, padding, dilation, groups)
    x = torch.randn(2, in_ch, 11, 9)
    macs = macs_of_call(conv, x)
    assert macs == ones_conv_reference(conv, x)
    with FlopCounterMode(display=False) as counter:
        conv(x)
    assert flops_from_macs(macs) == counter.get_total_flops()


@pytest.mark.parametrize("module, shape", [
    (nn.Linear(5, 7), (3, 2, 5)),
    (nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2), (1, 4, 5, 5)),
    (nn.Conv1d(3, 5, 4, dilation=2), (1, 3, 20)),
    (nn.Conv3d(2, 3, (1, 3, 3)), (1, 2, 3, 6, 6)),
])
def test_other_layers_against_flop_counter(module, shape):
    x = torch.randn(*shape)
    with FlopCounterMode(display=False) as counter:
        module(x)
    assert flops_from_macs(macs_of_call(module, x)) == counter.get_total_flops()


def test_linear_against_ones_reference():
    linear = nn.Linear(5, 7)
    x = torch.randn(3, 5)
    products = (torch.ones(3, 5, dtype=torch.float64) @ torch.ones(5, 7, dtype=torch.float64)).sum()
    assert macs_of_call(linear, x) == int(products.item())


@pytest.mark.parametrize("module", [nn.BatchNorm2d(4), nn.SiLU(), nn.MaxPool2d(2), nn.Upsample(scale_factor=2)])
def test_non_conv_layers_count_zero(module):
    assert macs_of_call(module.eval(), torch.randn(1, 4, 4, 4)) == 0


def test_unusable_shapes_count_zero():
    assert module_macs(nn.Conv2d(1, 1, 1), None, None) == 0
    assert module_macs(nn.ConvTranspose2d(1, 1, 1), [], [1, 1, 2, 2]) == 0


# YOLOv7 totals. Every feature map halves exactly from 160 to 5 (stride 32), so MACs at 640 are 16x those at
# 160. Published: YOLOv7 104.7 GFLOPs (fused); the unfused deploy cfg measures 105.8 on this project's machines.
# Conv-only counting gives 13.70 for yolov7-tiny, equal to torch's FlopCounterMode.
@pytest.mark.slow
@pytest.mark.parametrize("arch, fused, expected_gflops, tolerance", [
    ("yolov7-tiny", False, 13.7, 0.01),
    ("yolov7", False, 105.8, 0.005),
    ("yolov7", True, 104.7, 0.005),
])
def test_yolov7_gflops_at_640(arch, fused, expected_gflops, tolerance):
    models = pytest.importorskip("models")
    model = models.build_model(arch)
    if fused:
        model = models.fuse_model(model)
    x = torch.zeros(1, 3, 160, 160)
    with torch.inference_mode():
        with ModelTiming(model) as timing:
            model(x)
        with FlopCounterMode(display=False) as counter:
            model(x)
    flops_per_forward = timing.snapshot().flops_per_forward
    assert flops_per_forward == counter.get_total_flops()
    assert flops_per_forward * 16 / 1e9 == pytest.approx(expected_gflops, rel=tolerance)


def test_flops_per_forward_counts_each_call_site():
    shared = nn.Conv2d(2, 2, 1)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    x = torch.zeros(1, 2, 3, 3)
    with ModelTiming(model) as timing:
        model(x)
        model(x)
    per_call = 2 * 9 * 2
    assert timing.snapshot().macs_per_forward == 2 * per_call
    # Sequential registers the instance once, as "0", and calls it twice under the same parent.
    conv_rows = [(r.path, r.calls, r.macs) for r in timing.records if r.type == "Conv2d"]
    assert conv_rows == [("0", 4, per_call)]
