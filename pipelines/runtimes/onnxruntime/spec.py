"""ONNX Runtime's CPU execution provider over the cached ONNX export: what it offers, how it profiles."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipelines.runtimes.spec import KernelSource, NativeCode, RuntimeOptions, RuntimeSpec


class OnnxRuntimeOptions(RuntimeOptions):
    graph_optimization: Literal["disabled", "basic", "extended", "layout", "all"] = Field(
        "all", description="onnxruntime only: the session's graph optimization level (ORT_DISABLE_ALL ... "
                           "ORT_ENABLE_ALL); lower levels show what its graph rewrites gain")
    spinning: bool = Field(
        True, description="onnxruntime only: whether idle intra-op pool threads spin before they sleep "
                          "(`session.intra_op.allow_spinning`). true: ONNX Runtime's own default, what deployments "
                          "that keep its defaults run; false: they block at once, which frees the cores for the "
                          "torch ops after the forward (NMS, the next letterbox) but wakes the pool at each forward. "
                          "Which is faster depends on the CPU and the model: `tune` names the race that decides it "
                          "(see [runtimes.md](runtimes.md))")


SPEC = RuntimeSpec(
    name="onnxruntime",
    precisions=("fp32", "int8"),
    caches=True,
    file_kinds=(".onnx",),
    session="session:OnnxRuntime",
    library="onnxruntime",
    options=OnnxRuntimeOptions,
    layer_reader="layers:read_layers",
    trace_reader="trace:read_trace",
    preparing="the ONNX export is cached; the first one takes a while",
    native=NativeCode("onnxruntime", "ONNX Runtime", r"onnxruntime", "onnxruntime"),
    log_sources=("onnxruntime",),
    kernels=KernelSource("partial", source="ONNX Runtime's profile names each node's operator and execution "
                                           "provider, not the kernel its MLAS library picked (MLAS picks by the "
                                           "CPU flags at run time)"),
)
