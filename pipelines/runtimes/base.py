"""The runtime seam: the one place that prepares a network and runs its forward.

A runtime takes the loaded network and an example input and returns a `PreparedForward`: a callable from the input batch tensor
to the network's raw output, plus the torch module behind it when hooks can see one. `settings()` reports
what the runtime really uses (threads, precision, ...), for env.json and summary.json.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
from torch import nn

from pipelines.contract import LoadedNetwork
from utils.errors import UsageError


class RuntimeNotSupported(UsageError):
    """A runtime setting this machine or this runtime cannot do; the message says what to use instead."""


@dataclass
class PreparedForward:
    run: Callable[[torch.Tensor], Any]
    module: Optional[nn.Module]  # what per-layer hooks may attach to; None for runtimes outside torch
    # torch.uint8: the runtime takes the pixel values themselves, in the float input's layout, and divides them
    # by the network's pixel_scale inside its own graph; the pipeline's preprocessing then stops before converting.
    input_dtype: torch.dtype = torch.float32

    def __call__(self, batch: torch.Tensor, *extra: Any) -> Any:
        """`extra`: further arguments of the network's forward (R-CNN's image sizes); torch runtimes only.
        The output may be the runtime's own buffer (OpenVINO's, not copied): it holds until the calling thread's
        next forward, and whoever keeps it longer copies it."""
        return self.run(batch, *extra)


class Runtime(ABC):
    name: str

    @abstractmethod
    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        """`example` is an input batch of the run's shape (exporters trace with it; dynamic axes keep the
        batch size and the spatial size free)."""

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """What the runtime actually uses, read back after prepare()."""
