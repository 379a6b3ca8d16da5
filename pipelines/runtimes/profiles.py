"""What runtimes' own profilers report, as plain records (turned into per-layer rows by utils.recorders)."""
from __future__ import annotations

from dataclasses import dataclass


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
