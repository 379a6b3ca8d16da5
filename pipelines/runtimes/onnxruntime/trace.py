"""ONNX Runtime's own timeline of a profiled batch: around it the session runs with profiling on (as in the
layers pass), and its profile's events, nodes named by module path, join trace.json as their own process.
ONNX Runtime counts `ts` from its profiling session's start as the session reports it
(`get_profiling_start_time_ns`: the wall clock with libstdc++)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipelines.runtimes.onnxruntime.layers import KERNEL_SUFFIX, onnxruntime_scope
from pipelines.runtimes.profiles import NativeTrace


def readable_node(event: dict) -> dict:
    """`/model.0/act/LeakyRelu_output_0_nchwc_kernel_time` (a fused Conv) -> `model.0/Conv`, the module path
    layer_timer.csv uses, with ONNX Runtime's own node name kept in args as `onnx_node`."""
    node = event["name"][:-len(KERNEL_SUFFIX)] if event["name"].endswith(KERNEL_SUFFIX) else event["name"]
    op = event.get("args", {}).get("op_name") or node.rsplit("/", 1)[-1].split("_", 1)[0]
    path = ".".join(onnxruntime_scope(node, op)) or "Model"
    return dict(event, name=f"{path}/{op}", args=dict(event.get("args", {}), onnx_node=node))


def trace_events(profile_events: list[dict]) -> tuple[dict, ...]:
    """A profile's events, nodes named by module path."""
    return tuple(readable_node(event) if event.get("cat") == "Node" else dict(event) for event in profile_events)


def read_trace(runtime: Any, profile: Any) -> NativeTrace:
    """From what the session's profiling() left (an OrtProfile)."""
    version = runtime.settings().get("onnxruntime_version", "")
    return NativeTrace(f"onnxruntime {version}".strip(), trace_events(json.loads(Path(profile.path).read_text())),
                       profile.warmup_runs, profile.start_ns)
