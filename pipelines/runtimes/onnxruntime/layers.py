"""ONNX Runtime's per-layer timings: its profile JSON (Chrome trace format) has one `<node>_kernel_time`
event per node run and one `model_run` event per inference, whose time outside any node (input binding,
executor) is the unattributed row.

ONNX Runtime runs fused kernels and names a fused Conv+LeakyRelu after the activation's output
(`/model.0/act/LeakyRelu_output_0_nchwc`, op Conv): a node whose name is of another op than it runs is keyed
at the module holding both (`model.0`). It reports no kernel choice, so rows keep the last path segment as
torch rows do.
"""
from __future__ import annotations

import bisect
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Union

from pipelines.runtimes.profiles import NS_PER_US, RUN_EVENT, NodeRun, NodeRuns, last_runs, scope_of

SOURCE = "onnxruntime profiler"
KERNEL_SUFFIX = "_kernel_time"


def onnxruntime_scope(node_name: str, op: str) -> tuple[str, ...]:
    scope = scope_of(node_name)
    label = node_name.rsplit("/", 1)[-1].split("_", 1)[0]
    # Named after another op's output: the kernel fused that op (Conv+LeakyRelu named after the LeakyRelu
    # in model.0.act), so it belongs to the module holding both.
    if len(scope) > 1 and label != op:
        return scope[:-1]
    return scope


def node_runs(profile_json_path: Union[Path, str], forwards: int) -> NodeRuns:
    """The node runs of an ONNX Runtime profile's last `forwards` runs (earlier ones, such as the profiling
    session's warm-up, are left out)."""
    events = json.loads(Path(profile_json_path).read_text())
    runs = sorted((event for event in events if event.get("cat") == "Session" and event.get("name") == RUN_EVENT),
                  key=lambda event: event["ts"])
    kept = last_runs(runs, forwards, SOURCE)
    starts = [run["ts"] for run in kept]
    nodes = []
    for event in events:
        name = event.get("name", "")
        if event.get("cat") != "Node" or not name.endswith(KERNEL_SUFFIX):
            continue  # fences and session events are not node work
        inference = bisect.bisect_right(starts, event["ts"]) - 1
        if inference < 0 or event["ts"] > starts[inference] + kept[inference]["dur"]:
            continue  # a run before the pass
        node_name = name[:-len(KERNEL_SUFFIX)]
        op = event.get("args", {}).get("op_name") or node_name.rsplit("/", 1)[-1].split("_", 1)[0]
        nodes.append(NodeRun(inference, onnxruntime_scope(node_name, op), op, "", int(event["dur"]) * NS_PER_US))
    return NodeRuns(tuple(nodes), tuple(int(run["dur"]) * NS_PER_US for run in kept), SOURCE)


def read_layers(profile: Any, forwards: int) -> NodeRuns:
    """From what the session's profiling() left (an OrtProfile): its nodes, and each inference's input shape
    with the graph it ran, so that rows can count their MACs."""
    runs = node_runs(profile.path, forwards)
    shapes = tuple(profile.input_shapes[-forwards:]) if len(profile.input_shapes) >= forwards else ()
    return replace(runs, input_shapes=shapes, graph=profile.graph)
