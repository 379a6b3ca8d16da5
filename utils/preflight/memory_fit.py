"""Whether a batch at the configured input size fits in memory, judged before anything of that size exists.

A convolutional network's activations grow with the input area, so the part of the network that grows (the
family says which) is run twice at small sizes, the peak of the layer outputs alive at once is recorded with
hooks, and a line (a fixed part plus bytes per pixel) is fitted through the two points. That costs two small
forwards; the allocator's own error at the real size would come after an export, as a traceback ("tried to
allocate 51539607552 bytes").
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import psutil
import torch
from torch import nn

from utils.preflight.cgroup_files import CGROUP_ROOT, read_value
from utils.preflight.start_refusals import StartRefused

PROBE_SIDES = (64, 128)
# Peak RSS growth of a real forward over the live-output estimate, measured for yolov7 and yolov7-tiny at
# 320-1280, batch 1-8 (1.25-1.41: oneDNN workspaces and the allocator's slack). With it, R-CNN's estimates
# (backbone measured, heads counted) came out 1.1-2.5x its peak RSS growth at 480x800 and 800x1333.
MARGIN = 1.5
INPUT_BYTES_PER_PIXEL = 3 * 4  # the float32 input batch itself
UNLIMITED_V1 = 1 << 60  # cgroup v1 writes "no limit" as a number near 2^63
OVERRIDE_KEY = "benchmark.memory.check"  # false: the estimate no longer refuses a run


class MemoryRefused(StartRefused):
    """The configured batch cannot fit in the memory there is; the message names the largest that does."""


@dataclass(frozen=True)
class MemoryFit:
    fixed_bytes: float  # per image, whatever its size (R-CNN's proposals and box features)
    bytes_per_pixel: float  # per image and input pixel
    probe_sides: tuple[int, int] = PROBE_SIDES  # the square sides the network was measured at

    def batch_bytes(self, area: int, batch_size: int) -> float:
        per_image = MARGIN * (self.fixed_bytes + self.bytes_per_pixel * area) + INPUT_BYTES_PER_PIXEL * area
        return batch_size * per_image


def fit_line(small: tuple[int, int], large: tuple[int, int]) -> MemoryFit:
    """Through (area, bytes) at two sizes; a fixed part below zero (measurement noise) counts as none."""
    (area_a, bytes_a), (area_b, bytes_b) = small, large
    per_pixel = max(0.0, (bytes_b - bytes_a) / (area_b - area_a))
    return MemoryFit(max(0.0, bytes_a - per_pixel * area_a), per_pixel)


def largest_batch(fit: MemoryFit, area: int, available: int) -> int:
    """The most images of this area whose forward fits in `available` bytes (0: not even one)."""
    return int(available // fit.batch_bytes(area, 1))


def largest_side(fit: MemoryFit, batch_size: int, available: int, multiple: int = 32) -> int:
    """The largest square side, a multiple of `multiple`, at which a batch fits (0: none does)."""
    room = available / batch_size / MARGIN - fit.fixed_bytes
    per_pixel = fit.bytes_per_pixel + INPUT_BYTES_PER_PIXEL / MARGIN
    if room <= 0:
        return 0
    side = int(math.isqrt(int(room / per_pixel))) // multiple * multiple
    while side > 0 and fit.batch_bytes(side * side, batch_size) > available:
        side -= multiple
    return side


def live_peak_bytes(module: nn.Module, example: torch.Tensor) -> int:
    """The most bytes the leaf layers' outputs held at once during one forward (each storage counted once,
    released when its last tensor seen here is freed)."""
    live: dict[int, int] = {}
    state = {"now": 0, "peak": 0}

    def release(pointer: int) -> None:
        state["now"] -= live.pop(pointer, 0)

    def record(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            pointer = storage.data_ptr()
            if pointer not in live:
                live[pointer] = storage.nbytes()
                state["now"] += live[pointer]
                state["peak"] = max(state["peak"], state["now"])
                weakref.finalize(value, release, pointer)
        elif isinstance(value, (list, tuple)):
            for item in value:
                record(item)
        elif isinstance(value, dict):
            for item in value.values():
                record(item)

    hooks = [leaf.register_forward_hook(lambda _module, _inputs, output: record(output))
             for leaf in module.modules() if next(leaf.children(), None) is None]
    try:
        with torch.inference_mode():
            module(example)
    finally:
        for hook in hooks:
            hook.remove()
    return state["peak"]


def probe_sides(smallest_input: int) -> tuple[int, int]:
    """PROBE_SIDES, or twice as large a pair from the smallest input a network's layers can take."""
    if smallest_input <= PROBE_SIDES[0]:
        return PROBE_SIDES
    return smallest_input, 2 * smallest_input


def measure_fit(module: nn.Module, other_bytes: int = 0, smallest_input: int = 1) -> MemoryFit:
    """`module` measured at PROBE_SIDES (or larger, where its layers take no input that small); `other_bytes`:
    per image, what the rest of the network adds whatever the input size."""
    sides = probe_sides(smallest_input)
    was_training = module.training
    module.eval()
    try:
        points = [(side * side, live_peak_bytes(module, torch.zeros(1, 3, side, side))) for side in sides]
    finally:
        module.train(was_training)
    fit = fit_line(points[0], points[1])
    return MemoryFit(fit.fixed_bytes + other_bytes, fit.bytes_per_pixel, sides)


def cgroup_room(root: Path = CGROUP_ROOT, read: Callable[[Path], Optional[str]] = None) -> Optional[int]:
    """Bytes left under this process's cgroup memory limit (v2 memory.max, or v1 limit_in_bytes), None
    where no limit is set."""
    read = read or read_value
    for limit_file, usage_file in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes")):
        limit = read(root / limit_file)
        if limit is None or not limit.isdigit() or int(limit) >= UNLIMITED_V1:
            continue  # "max": no limit at this level
        usage = read(root / usage_file)
        return max(0, int(limit) - (int(usage) if usage and usage.isdigit() else 0))
    return None


def available_memory() -> tuple[int, str]:
    """Bytes a new allocation can take, and where that figure comes from."""
    machine = psutil.virtual_memory().available
    room = cgroup_room()
    if room is not None and room < machine:
        return room, "left under this process's cgroup memory limit"
    return machine, "available on this machine"


def size_text(count: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count / 2**10:,.1f} KiB"


def check_fits(fit: MemoryFit, sizes: dict[str, int], area: int, batch_size: int, available: int,
               where: str) -> None:
    """Raises MemoryRefused naming the estimate, the memory there is and the largest size and batch that fit.
    `sizes`: the config keys that set the input size with their values; `area`: the input pixels they allow."""
    needed = fit.batch_bytes(area, batch_size)
    if needed <= available:
        return
    fitting_batch = largest_batch(fit, area, available)
    fitting_side = largest_side(fit, batch_size, available)
    current = " and ".join(f"{key} {value}" for key, value in sizes.items())
    fitting = " and ".join(f"{key} {fitting_side}" for key in sizes)
    batch_hint = (f"dataset.batch_size {fitting_batch} at this size" if fitting_batch
                  else "no batch size at this size (not even one image)")
    side_hint = (f"{fitting} at dataset.batch_size {batch_size}" if fitting_side
                 else f"no input size at dataset.batch_size {batch_size}")
    made_of = (f"{batch_size} x ({MARGIN} x ({size_text(fit.fixed_bytes)} fixed + {fit.bytes_per_pixel:,.1f} "
               f"bytes/pixel x {area:,} pixels of layer outputs) + {INPUT_BYTES_PER_PIXEL} bytes/pixel of input)")
    raise MemoryRefused(
        f"{current} with batches of {batch_size} image(s) needs about {size_text(needed)} for one forward "
        f"(estimated from the network measured at {fit.probe_sides[0]} and {fit.probe_sides[1]} pixels square and scaled "
        f"with the input area: {made_of}), but {size_text(available)} is {where}. The largest that fits: "
        f"{side_hint}, or {batch_hint}. If you know it fits, set {OVERRIDE_KEY}: false (--set "
        f"{OVERRIDE_KEY}=false) to run without this check")
