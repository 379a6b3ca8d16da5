"""ONNX Runtime's CPU execution provider over the cached ONNX export: what it offers, how it profiles."""
from __future__ import annotations

from pipelines.runtimes.spec import RuntimeSpec

SPEC = RuntimeSpec(
    name="onnxruntime",
    precisions=("fp32", "int8"),
    session="session:OnnxRuntime",
    shared_keys=("cache_dir",),
    layer_reader="layers:read_layers",
    trace_reader="trace:read_trace",
    preparing="the ONNX export is cached; the first one takes a while",
)
