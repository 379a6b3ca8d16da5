"""torch on the CPU, the reference configuration: what it offers, its own config keys."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipelines.runtimes.spec import KernelSource, NativeCode, RuntimeOptions, RuntimeSpec


class TorchOptions(RuntimeOptions):
    channels_last: bool = Field(False, description="torch only: NHWC memory format")
    compile: bool = Field(False, description="torch only: `torch.compile` (its first call, measured apart, compiles)")
    compile_mode: Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = Field(
        "default", description="torch only, with runtime.compile: torch.compile's `mode`")
    compile_backend: str = Field("inductor", min_length=1, description=(
        "torch only, with runtime.compile: torch.compile's `backend`, one of torch._dynamo.list_backends() "
        "(`inductor`; `eager` and `aot_eager` to tell a compiler's gain from dynamo's own)"))


SPEC = RuntimeSpec(
    name="torch",
    precisions=("fp32", "bf16"),
    session="session:TorchEager",
    library="torch",
    options=TorchOptions,
    refusals={"int8": "torch int8 (PT2E with the X86 Inductor quantizer) starts from torch.export, which stops at "
                      "YOLOv7's Detect decode (its float(stride) is data-dependent), so it is not offered"},
    reference=True,
    keeps_modules=True,
    native=NativeCode("torch_onednn", "native torch/oneDNN",
                      r"(libtorch|libc10|libdnnl|libmkl|libgomp|libiomp|libmkldnn|libshm|/torch/lib/)", "libdnnl"),
    kernels=KernelSource("measured", source="oneDNN verbose output of one extra batch (not timed)",
                         reason="this torch runtime (runtime.compile) runs no modules whose calls could mark "
                                "oneDNN's output", onednn_verbose=True),
)
