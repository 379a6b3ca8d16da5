"""OpenVINO's per-layer timings: performance counters per node after each inference
(`InferRequest.get_profiling_info()`). It reports nodes only, so an inference's total is its nodes' sum and
nothing is unattributed. It names a fused Conv+activation after the conv (`model.1.conv`); a row's name is
the kernel it chose (`brgconv_avx512_amx_1x1_bf16` says AMX and bf16)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from pipelines.runtimes.profiles import NS_PER_US, NodeRun, NodeRuns, last_runs, scope_of

SOURCE = "openvino performance counters"
EXECUTED = "EXECUTED"


@dataclass(frozen=True)
class NodeCounter:
    """One OpenVINO performance counter of one inference (`InferRequest.get_profiling_info()`)."""

    inference: int  # index of the inference within the profiled pass
    node_name: str
    node_type: str
    exec_type: str
    real_time_us: float
    cpu_time_us: float
    status: str  # EXECUTED, NOT_RUN or OPTIMIZED_OUT


def node_runs(counters: Iterable[NodeCounter], forwards: int) -> NodeRuns:
    """The node runs of the last `forwards` inferences among the counters."""
    executed = [counter for counter in counters if counter.status == EXECUTED]
    inferences = sorted({counter.inference for counter in executed})
    kept = {inference: index for index, inference in enumerate(last_runs(inferences, forwards, SOURCE))}
    nodes = tuple(NodeRun(kept[counter.inference], scope_of(counter.node_name), counter.node_type,
                          counter.exec_type, round(counter.real_time_us * NS_PER_US))
                  for counter in executed if counter.inference in kept)
    run_totals = [0] * len(kept)
    for node in nodes:
        run_totals[node.inference] += node.ns
    return NodeRuns(nodes, tuple(run_totals), SOURCE)


def read_layers(profile: Any, forwards: int) -> NodeRuns:
    """From what the session's profiling() left (an OpenVinoProfile): its nodes, and each inference's input shape
    with the ONNX graph it was read from, so that rows can count their MACs."""
    runs = node_runs(profile.counters, forwards)
    shapes = tuple(profile.input_shapes[-forwards:]) if len(profile.input_shapes) >= forwards else ()
    return replace(runs, input_shapes=shapes, graph=profile.graph)
