"""OpenVINO's CPU plugin over the cached ONNX export: what it offers, how it profiles (counters per layer,
no timeline to merge into trace.json)."""
from __future__ import annotations

from pipelines.runtimes.spec import RuntimeSpec

SPEC = RuntimeSpec(
    name="openvino",
    precisions=("fp32", "bf16", "int8"),
    session="session:OpenVinoRuntime",
    shared_keys=("cache_dir",),
    layer_reader="layers:read_layers",
    preparing="the ONNX export is cached; the first one takes a while",
)
