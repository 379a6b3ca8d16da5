"""ONNX Runtime's CPU execution provider over the cached ONNX export: what it offers, how it profiles."""
from __future__ import annotations

from pipelines.runtimes.spec import KernelSource, NativeCode, RuntimeSpec

SPEC = RuntimeSpec(
    name="onnxruntime",
    precisions=("fp32", "int8"),
    session="session:OnnxRuntime",
    library="onnxruntime",
    shared_keys=("cache_dir",),
    layer_reader="layers:read_layers",
    trace_reader="trace:read_trace",
    preparing="the ONNX export is cached; the first one takes a while",
    native=NativeCode("onnxruntime", "ONNX Runtime", r"onnxruntime", "onnxruntime"),
    log_sources=("onnxruntime",),
    kernels=KernelSource("partial", source="ONNX Runtime's profile names each node's operator and execution "
                                           "provider, not the kernel its MLAS library picked (MLAS picks by the "
                                           "CPU flags at run time)"),
)
