"""The building blocks of the YOLOv7 networks (models/common.py), against the plain torch they stand for: padding that
keeps the size, conv then batch norm then an in-place activation, the pools, and RepConv's branches."""
import pytest
import torch
from torch import nn

from models.common import BN_EPS, BN_MOMENTUM, MP, SP, SPPCSPC, Concat, Conv, RepConv, same_padding


def test_same_padding_keeps_the_size_unless_one_is_given():
    assert [same_padding(k, None) for k in (1, 3, 5)] == [0, 1, 2] and same_padding(3, 0) == 0


def test_a_conv_is_conv_then_batch_norm_then_its_activation():
    torch.manual_seed(0)
    block = Conv(3, 4, k=3, s=2).eval()
    assert block.conv.bias is None and block.conv.padding == (1, 1) and block.conv.stride == (2, 2)
    assert (block.bn.eps, block.bn.momentum) == (BN_EPS, BN_MOMENTUM)
    assert isinstance(block.act, nn.SiLU) and block.act.inplace
    x = torch.rand(1, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(block(x), nn.functional.silu(block.bn(block.conv(x))))
    assert isinstance(Conv(3, 4, act=False).act, nn.Identity)
    leaky = nn.LeakyReLU(0.1)
    assert Conv(3, 4, act=leaky).act is leaky
    block.bn = None  # fused: the conv alone, then the activation
    assert block(x).shape == (1, 4, 4, 4)


def test_the_pools_downsample_or_keep_the_size_and_concat_joins_channels():
    x = torch.arange(16.0).reshape(1, 1, 4, 4)
    assert MP()(x).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert SP(3)(x).shape == x.shape and SP(3)(x)[0, 0, 0, 0] == 5.0
    assert Concat()([torch.zeros(1, 2, 3, 3), torch.ones(1, 5, 3, 3)]).shape == (1, 7, 3, 3)
    assert SPPCSPC(4, 6)(torch.rand(1, 4, 16, 16)).shape == (1, 6, 16, 16)


def test_repconv_sums_its_branches_and_has_an_identity_only_where_shapes_allow():
    torch.manual_seed(1)
    same = RepConv(4, 4).eval()
    assert same.rbr_identity is not None and RepConv(4, 8).rbr_identity is None
    assert RepConv(4, 4, s=2).rbr_identity is None
    x = torch.rand(1, 4, 6, 6)
    with torch.no_grad():
        expected = nn.functional.silu(same.rbr_dense(x) + same.rbr_1x1(x) + same.rbr_identity(x))
        torch.testing.assert_close(same(x), expected)
    with pytest.raises(ValueError, match="odd kernel size, got 2"):
        RepConv(4, 4, k=2)
