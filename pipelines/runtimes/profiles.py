"""What runtimes' own profilers report, as plain records: a runtime's layer reader turns its profile into
`NodeRuns`, its trace reader into a `NativeTrace`; utils.measure.layers turns those into per-layer rows and
trace events. Node names follow the legacy ONNX exporter, `/<module scope>/<OpType>[_<n>]`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

NS_PER_US = 1000
RUN_EVENT = "model_run"  # a runtime trace's event of one whole inference (ONNX Runtime's own name)


@dataclass(frozen=True)
class NodeRun:
    """One node's work in one inference of the profiled pass."""

    inference: int  # index of the inference within the pass
    scope: tuple[str, ...]  # module path segments; () for nodes the runtime inserted
    op: str
    kernel: str  # the kernel the runtime chose, the row's name; "" when the runtime reports none
    ns: int


@dataclass(frozen=True)
class NodeRuns:
    """A runtime's layer reader's answer for one pass."""

    nodes: tuple[NodeRun, ...]
    run_totals: tuple[int, ...]  # ns of each inference as the runtime reports it (its nodes' sum if it does not)
    source: str  # where the timings came from, e.g. "onnxruntime profiler"
    input_shapes: tuple[tuple[int, ...], ...] = ()  # each inference's input shape, where the runtime recorded it
    graph: str = ""  # the ONNX file the runtime ran (its nodes' MACs are counted from it); "" where none


@dataclass(frozen=True)
class NativeTrace:
    """A runtime's own timeline of one profiled batch: Chrome trace complete events with `ts` in microseconds
    from `start_ns` (the start as the runtime reports it, on a clock of its choosing), one RUN_EVENT per
    inference; the first `warmup_runs` runs are the profiling session's warm-up, not the batch."""

    process_name: str
    events: tuple[dict, ...]
    warmup_runs: int
    start_ns: int


def scope_of(node_name: str) -> tuple[str, ...]:
    """`/model.77/m.0/Conv_output_0_nchwc` -> ("model.77", "m.0"); a name without a leading "/" -> ().
    The scope ends at the first segment that starts with a capital letter (ONNX op types are CamelCase,
    module attributes are not), so OpenVINO's `/model.1/conv/Conv/WithoutBiases` is `model.1.conv` too."""
    if not node_name.startswith("/"):
        return ()
    scope: list[str] = []
    for segment in node_name[1:].split("/"):
        if not segment or segment[0].isupper():
            break
        scope.append(segment)
    return tuple(scope)


def last_runs(runs: Sequence, forwards: int, source: str) -> Sequence:
    """The pass's runs: the last `forwards` of those recorded (earlier ones are the profiler's warm-up)."""
    if forwards < 1 or len(runs) < forwards:
        raise ValueError(f"{source}: {len(runs)} inference(s) recorded, fewer than the {forwards} forward(s) of "
                         "the pass: was the pass run inside the runtime's profiling() context?")
    return runs[len(runs) - forwards:]
