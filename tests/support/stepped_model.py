"""A model whose modules spend time only on a clock the test controls (utils/measure/layers/: ModelTiming and the
layer tables built from it), so that every expected figure is exact."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from utils.measure.layers.model_timing import ModelTiming


NS_PER_MS = 1_000_000


class SteppedClock:
    """A nanosecond clock that moves only when a module below spends time on it, so no other process can stretch
    a measured duration and every expected figure is exact."""

    def __init__(self):
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, ms: float) -> None:
        self.now_ns += int(ms * NS_PER_MS)


CLOCK = SteppedClock()


def spin(ms: float) -> None:
    """Spend `ms` on the test's clock."""
    CLOCK.advance(ms)


class Spin(nn.Module):
    def __init__(self, ms: float):
        super().__init__()
        self.ms = ms

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spin(self.ms)
        return x


class Block(nn.Module):
    """Does its own work, then calls its child."""

    def __init__(self, own_ms: float, child: nn.Module):
        super().__init__()
        self.own_ms = own_ms
        self.child = child

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spin(self.own_ms)
        return self.child(x)


class Net(nn.Module):
    """first and second share one Spin(2) instance; repeat runs twice per forward; 1 ms in forward itself."""

    def __init__(self):
        super().__init__()
        shared = Spin(2)
        self.first = Block(1, shared)
        self.second = Block(1, shared)
        self.repeat = Spin(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spin(1)
        x = self.second(self.first(x))
        return self.repeat(self.repeat(x))


class SpinStep:
    """A plain callable transform (not an nn.Module)."""

    def __init__(self, ms: float):
        self.ms = ms

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        spin(self.ms)
        return x + 1


def assert_busy_time(measured_ms: float, expected_ms: float) -> None:
    assert measured_ms == pytest.approx(expected_ms, abs=1e-9), (measured_ms, expected_ms)


def by_path(timing: ModelTiming) -> dict:
    return {record.path: record for record in timing.records}


def time_two_forwards() -> ModelTiming:
    net = Net()
    pre, post = SpinStep(2), SpinStep(1)
    with ModelTiming(net, pre_transforms=[pre], post_transforms=[post], clock=CLOCK) as timing:
        net(torch.zeros(1))  # warm-up, then dropped
        timing.reset()
        for _ in range(2):
            post(net(pre(torch.zeros(1))))
    return timing
