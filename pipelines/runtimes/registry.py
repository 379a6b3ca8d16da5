"""Runtimes by `runtime.backend`. A new runtime adds one line here (and its name to the config's choices).

Imported lazily: OpenVINO and ONNX Runtime take a second to import, and a torch run needs neither.
"""
from __future__ import annotations

import importlib
from typing import Any

from pipelines.runtimes.base import Runtime

RUNTIMES = {
    "torch": ("pipelines.runtimes.torch.session", "TorchEager"),
    "onnxruntime": ("pipelines.runtimes.onnxruntime.session", "OnnxRuntime"),
    "openvino": ("pipelines.runtimes.openvino.session", "OpenVinoRuntime"),
}


def build_runtime(backend: str, **settings: Any) -> Runtime:
    module_name, class_name = RUNTIMES[backend]
    return getattr(importlib.import_module(module_name), class_name)(**settings)
