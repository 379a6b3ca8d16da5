"""oneDNN's verbose output of one batch, captured at the file descriptor, with every convolution module's call
marked in the same stream (utils.measure.below_layer.kernels reads it back).

oneDNN prints from C to the process's standard output, past Python's sys.stdout, so the capture swaps file
descriptor 1 for a file for the length of the batch. C's stdio buffer is flushed at every marker and at the
end, so its lines and the markers keep their true order.
"""
from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from utils.measure.below_layer.kernels import MARKER

_libc = ctypes.CDLL(None)


def _flush_c_stdio() -> None:
    _libc.fflush(None)


class _Markers:
    """Forward hooks on every convolution module writing begin/end markers into fd 1; removed on exit."""

    def __init__(self, model: nn.Module):
        self.handles = []
        for path, module in model.named_modules():
            if isinstance(module, nn.modules.conv._ConvNd):
                self.handles.append(module.register_forward_pre_hook(self._marker("begin", path)))
                self.handles.append(module.register_forward_hook(self._marker("end", path)))

    @staticmethod
    def _marker(edge: str, path: str) -> Callable[..., None]:
        line = f"{MARKER},{edge},{path}\n".encode()

        def write(*_: Any) -> None:
            _flush_c_stdio()
            os.write(1, line)
        return write

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def capture_onednn_verbose(run: Callable[[], Any], model: nn.Module, output: Path) -> str:
    """Runs `run()` once with oneDNN's verbose mode on and the convolutions of `model` marked; the captured
    text is written to `output` and returned."""
    output.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    _flush_c_stdio()
    saved = os.dup(1)
    markers = _Markers(model)
    try:
        with open(output, "wb") as capture:
            os.dup2(capture.fileno(), 1)
            try:
                with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                    run()
            finally:
                sys.stdout.flush()
                _flush_c_stdio()
                os.dup2(saved, 1)
    finally:
        os.close(saved)
        markers.remove()
    return output.read_text(errors="replace")
