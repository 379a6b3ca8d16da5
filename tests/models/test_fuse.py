"""Fusing YOLOv7 for inference (models/fuse.py): batch norm folded into the conv, by hand and against conv then BN;
padded and identity kernels; RepConv's branches re-parameterised into one conv; a fused yolov7-tiny equal to the
unfused one."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from models import build_model, fuse_model
from models.common import Conv, RepConv
from models.fuse import fold_batchnorm, identity_kernel, pad_to_kernel
from tests.support.batchnorms import randomize_batchnorms


@pytest.fixture(scope="module")
def tiny():
    return build_model("yolov7-tiny")


def test_fold_batchnorm_hand_computed():
    bn = nn.BatchNorm2d(2, eps=1.0).eval()
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.0, 2.0]))
        bn.bias.copy_(torch.tensor([0.5, -1.0]))
        bn.running_mean.copy_(torch.tensor([1.0, 0.0]))
        bn.running_var.copy_(torch.tensor([3.0, 15.0]))
    weight = torch.tensor([[[[2.0]]], [[[3.0]]]])
    # sqrt(var + eps) = [2, 4]; scale = gamma / std = [0.5, 0.5]
    # w' = [2 * 0.5, 3 * 0.5]; b' = beta + (0 - mean) * scale = [0.5 - 0.5, -1 + 0]
    folded_weight, folded_bias = fold_batchnorm(weight, None, bn)
    assert folded_weight.flatten().tolist() == [1.0, 1.5]
    assert folded_bias.tolist() == [0.0, -1.0]
    # with a conv bias [4, 8]: b' = [0.5 + (4 - 1) * 0.5, -1 + 8 * 0.5]
    assert fold_batchnorm(weight, torch.tensor([4.0, 8.0]), bn)[1].tolist() == [2.0, 3.0]


def test_fold_batchnorm_matches_conv_then_bn():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1, bias=True)
    bn = nn.BatchNorm2d(4, eps=1e-3)
    randomize_batchnorms(bn, seed=1)
    bn.eval()
    x = torch.randn(2, 3, 5, 5)
    weight, bias = fold_batchnorm(conv.weight, conv.bias, bn)
    with torch.no_grad():
        torch.testing.assert_close(F.conv2d(x, weight, bias, padding=1), bn(conv(x)), rtol=1e-5, atol=1e-5)


def test_pad_and_identity_kernels():
    padded = pad_to_kernel(torch.full((1, 1, 1, 1), 5.0), 3)
    assert padded.shape == (1, 1, 3, 3) and padded.sum() == 5.0 and padded[0, 0, 1, 1] == 5.0
    x = torch.randn(1, 4, 5, 5)
    for groups in (1, 2):
        kernel = identity_kernel(4, groups, 3, x)
        assert torch.equal(F.conv2d(x, kernel, padding=1, groups=groups), x)


@pytest.mark.parametrize("c1, c2, stride", [(6, 6, 1), (4, 8, 1), (6, 6, 2)])
def test_repconv_reparameterisation_matches_branches(c1, c2, stride):
    torch.manual_seed(7)
    module = RepConv(c1, c2, 3, stride)
    assert (module.rbr_identity is not None) == (c1 == c2 and stride == 1)
    randomize_batchnorms(module, seed=2)
    module.eval()
    x = torch.randn(2, c1, 9, 9)
    with torch.no_grad():
        expected = module(x)
        fuse_model(module)
        fused = module(x)
    assert module.rbr_dense is None and module.rbr_1x1 is None and module.rbr_identity is None
    assert isinstance(module.rbr_reparam, nn.Conv2d) and module.rbr_reparam.bias is not None
    assert module.rbr_reparam.kernel_size == (3, 3)
    torch.testing.assert_close(fused, expected, rtol=1e-5, atol=1e-5)


def test_fused_model_matches_unfused(tiny):
    model = copy.deepcopy(tiny)
    randomize_batchnorms(model, seed=5)
    x = torch.rand(1, 3, 160, 160)
    with torch.no_grad():
        expected = model(x)
        fuse_model(model)
        fused = model(x)
    assert all(m.bn is None and m.conv.bias is not None for m in model.modules() if isinstance(m, Conv))
    assert not any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    scale = expected.abs().max().item()
    torch.testing.assert_close(fused, expected, rtol=0, atol=1e-4 * scale)
