"""torch eager on the CPU: fused float32 modules under inference_mode."""
from __future__ import annotations

from typing import Any, Optional

import torch
from pipelines.runtimes.base import LoadedNetwork, PreparedForward, Runtime


class TorchEager(Runtime):
    name = "torch"

    def __init__(self, fuse: bool = True, threads: Optional[int] = None):
        self.fuse = fuse
        self.threads = threads
        self._fused = False

    def prepare(self, network: LoadedNetwork, example: torch.Tensor) -> PreparedForward:
        # Threads are process-wide in torch: set once here, read back in settings().
        if self.threads:
            torch.set_num_threads(self.threads)
        module = network.module
        if self.fuse and network.fuse is not None:
            network.fuse(module)
            self._fused = True
        module.float().eval()

        def run(batch: torch.Tensor) -> Any:
            with torch.inference_mode():
                return module(batch)

        return PreparedForward(run, module)

    def settings(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "precision": "fp32",
            "fused": self._fused,
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "inference_mode": True,
        }

