"""Building blocks of the YOLOv7 networks (semantics in /work/shared/reference/yolov7/README.md)."""
from __future__ import annotations

import torch
from torch import nn

BN_EPS = 1e-3
BN_MOMENTUM = 0.03


def batch_norm(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=BN_EPS, momentum=BN_MOMENTUM)


def same_padding(kernel: int, padding: int | None) -> int:
    """Padding that keeps the spatial size at stride 1 unless one is given explicitly."""
    return kernel // 2 if padding is None else padding


def resolve_activation(act: bool | nn.Module) -> nn.Module:
    """True -> SiLU (the YOLOv7 default), False -> Identity, a module -> that module.

    In place: an activation always follows a conv or BN whose output nothing else reads, and a fresh output
    tensor per activation (about 90 in YOLOv7, tens of MB each at 640) cost 15-20% of the forward on CPU.
    """
    if isinstance(act, nn.Module):
        return act
    return nn.SiLU(inplace=True) if act else nn.Identity()


class Conv(nn.Module):
    """Conv2d (no bias) -> BatchNorm2d -> activation. After fusing, `bn` is None and `conv` has a bias."""

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None, g: int = 1,
                 act: bool | nn.Module = True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, same_padding(k, p), groups=g, bias=False)
        self.bn: nn.BatchNorm2d | None = batch_norm(c2)
        self.act = resolve_activation(act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        return self.act(x)


class Concat(nn.Module):
    def __init__(self, d: int = 1):
        super().__init__()
        self.d = d

    def forward(self, xs: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(xs, self.d)


class MP(nn.Module):
    """Downsampling max-pool: window k, stride k."""

    def __init__(self, k: int = 2):
        super().__init__()
        self.m = nn.MaxPool2d(kernel_size=k, stride=k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.m(x)


class SP(nn.Module):
    """Max-pool that keeps the spatial size at stride 1."""

    def __init__(self, k: int = 3, s: int = 1):
        super().__init__()
        self.m = nn.MaxPool2d(kernel_size=k, stride=s, padding=k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.m(x)


class SPPCSPC(nn.Module):
    """Spatial pyramid pooling on one half of a cross-stage-partial split, merged with the other half."""

    def __init__(self, c1: int, c2: int, k: tuple[int, ...] = (5, 9, 13)):
        super().__init__()
        hidden = c2  # the reference's int(2 * c2 * e) with e = 0.5
        self.cv1 = Conv(c1, hidden, 1)
        self.cv2 = Conv(c1, hidden, 1)
        self.cv3 = Conv(hidden, hidden, 3)
        self.cv4 = Conv(hidden, hidden, 1)
        self.m = nn.ModuleList(nn.MaxPool2d(kernel_size=size, stride=1, padding=size // 2) for size in k)
        self.cv5 = Conv((len(k) + 1) * hidden, hidden, 1)
        self.cv6 = Conv(hidden, hidden, 3)
        self.cv7 = Conv(2 * hidden, c2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.cv4(self.cv3(self.cv1(x)))
        pooled = self.cv6(self.cv5(torch.cat([x1] + [pool(x1) for pool in self.m], 1)))
        return self.cv7(torch.cat((pooled, self.cv2(x)), 1))


class RepConv(nn.Module):
    """Sum of a kxk conv+BN, a 1x1 conv+BN and (when shapes allow) a BN-only identity branch.

    After re-parameterisation the three branches are None and `rbr_reparam` (kxk conv with bias) replaces them.
    """

    def __init__(self, c1: int, c2: int, k: int = 3, s: int = 1, p: int | None = None, g: int = 1,
                 act: bool | nn.Module = True):
        super().__init__()
        if k % 2 != 1:
            raise ValueError(f"RepConv needs an odd kernel size, got {k}")
        padding = same_padding(k, p)
        self.act = resolve_activation(act)
        self.rbr_identity: nn.BatchNorm2d | None = batch_norm(c1) if c1 == c2 and s == 1 else None
        self.rbr_dense: nn.Sequential | None = nn.Sequential(
            nn.Conv2d(c1, c2, k, s, padding, groups=g, bias=False), batch_norm(c2))
        # the 1x1 branch samples the kxk window's centre, so its padding is the kxk padding minus k // 2
        self.rbr_1x1: nn.Sequential | None = nn.Sequential(
            nn.Conv2d(c1, c2, 1, s, padding - k // 2, groups=g, bias=False), batch_norm(c2))
        self.rbr_reparam: nn.Conv2d | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rbr_reparam is not None:
            return self.act(self.rbr_reparam(x))
        y = self.rbr_dense(x) + self.rbr_1x1(x)
        if self.rbr_identity is not None:
            y = y + self.rbr_identity(x)
        return self.act(y)
