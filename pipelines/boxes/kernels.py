"""NMS and IoU over x1y1x2y2 boxes for every family, without importing torchvision's Python package.

Importing `torchvision` imports its models and ops, and through them torch._dynamo and sympy: about a second of
every detbench process's start that a YOLO run never uses (benchmarks/overhead/startup_gc_pause.py measures a run's start). NMS is
torchvision's compiled kernel, loaded here straight from the package's extension library through torch's own
`torch.ops.load_library`; where that library cannot be found, torchvision is imported after all. IoU is a few
tensor operations, computed here.
"""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
from pathlib import Path
from typing import Callable, Optional

import torch

# The names torchvision's compiled extension has had: `_C_stable` since its ops moved to the stable ABI.
EXTENSION_NAMES = ("_C_stable", "_C")

# A Python without torchvision is told so as the run starts, as an import of it would tell it (utils/core/errors.py
# turns this into the setup instruction), not at the first NMS.
_TORCHVISION = importlib.util.find_spec("torchvision")
if _TORCHVISION is None:
    raise ModuleNotFoundError("No module named 'torchvision'", name="torchvision")


def extension_library(package_dir: Path) -> Optional[Path]:
    """The compiled extension in torchvision's package folder that registers `torch.ops.torchvision`, or None."""
    for name in EXTENSION_NAMES:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = package_dir / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    return None


@functools.cache
def _nms_kernel() -> Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]:
    library = extension_library(Path(_TORCHVISION.origin).parent) if _TORCHVISION.origin else None
    if library is not None:
        try:
            torch.ops.load_library(str(library))
            return torch.ops.torchvision.nms
        except (OSError, RuntimeError, AttributeError):
            pass  # a build that loads only through its package: import it below
    import torchvision
    return torchvision.ops.nms


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Indices of the boxes kept, by descending score: each box suppresses the lower-scored boxes whose IoU with it
    is above `iou_threshold` (torchvision.ops.nms)."""
    return _nms_kernel()(boxes, scores, float(iou_threshold))


def box_area(boxes: torch.Tensor) -> torch.Tensor:
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(N, 4) and (M, 4) boxes -> (N, M) intersection over union, in their dtype. Two boxes of zero area give
    0/0 = NaN, as torchvision's box_iou does; callers that care decide what it means."""
    top_left = torch.max(a[:, None, :2], b[None, :, :2])
    bottom_right = torch.min(a[:, None, 2:], b[None, :, 2:])
    intersection = (bottom_right - top_left).clamp(min=0).prod(dim=2)
    return intersection / (box_area(a)[:, None] + box_area(b)[None, :] - intersection)
