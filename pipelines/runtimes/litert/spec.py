"""LiteRT (ai-edge-litert, TensorFlow Lite's runtime, XNNPACK inside) running a .tflite file given as model.file:
what it offers, and why it has no layer timing."""
from __future__ import annotations

from pydantic import Field

from pipelines.runtimes.spec import KernelSource, NativeCode, RuntimeOptions, RuntimeSpec


class LiteRtOptions(RuntimeOptions):
    xnnpack: bool = Field(
        True, description="litert only: whether LiteRT applies its default XNNPACK delegate (its own default, what "
                          "deployments run); false: its builtin CPU kernels alone (the op resolver without default "
                          "delegates), which shows what XNNPACK gains")


SPEC = RuntimeSpec(
    name="litert",
    precisions=("fp32",),
    refusals={
        "int8": "a .tflite runs as the file is, at fp32 whatever its weights are stored in; detbench does not "
                "quantize one: quantize the model with onnx2tf (-oiqt, your calibration images via -cind) or "
                "TensorFlow's converter (a representative dataset of your images) and give that file",
        "bf16": "LiteRT's CPU kernels run float32 or the file's own int8",
    },
    session="session:LiteRtRuntime",
    library="ai_edge_litert",
    options=LiteRtOptions,
    file_kinds=(".tflite",),
    files_only=True,
    no_layer_timing=("ai-edge-litert's Python API (Interpreter and CompiledModel) has no operator profiler; LiteRT "
                     "times operators only in its C++ API and its benchmark_model tool (--enable_op_profiling), "
                     "which the package does not ship"),
    native=NativeCode("litert", "LiteRT", r"_pywrap_litert|libLiteRt|ai_edge_litert", "_pywrap_litert"),
    log_sources=("ai_edge_litert",),
    kernels=KernelSource("unavailable", reason="LiteRT's Python API names no kernels (XNNPACK picks its own by the "
                                               "CPU's flags)"),
)
