"""What lies below the layer, as plain data: py-spy's timed stacks, the CPU's counters per batch, the kernels
that ran and the ITT tasks, gathered by utils.measure.below_layer.control and written by utils.measure.below_layer.files."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from utils.record.run_record import Table
from utils.record.sections import CpuCountersSection, KernelsSection, NativeTimeSection


@dataclass
class SamplerResult:
    status: str  # measured | unavailable | died
    reason: Optional[str] = None
    command: list[str] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)  # py-spy's chrometrace events
    samples: Optional[int] = None
    errors: Optional[int] = None
    marks_ns: list[tuple[int, int]] = field(default_factory=list)  # (start, end) of each clock mark
    rate: int = 0
    main_thread: Optional[int] = None  # the pthread id py-spy gives the thread that runs the steps
    behind_s: Optional[float] = None  # the longest lag py-spy reported ("behind in sampling")


@dataclass(frozen=True)
class BatchCounters:
    """One batch's differences per thread (tid -> counter -> amount); times on perf_counter_ns."""

    start_ns: int
    end_ns: int
    threads: dict[int, dict[str, float]]


@dataclass
class BelowLayer:
    unix_minus_perf_ns: int  # time.time_ns() - time.perf_counter_ns(): puts the step clock on the Unix clock
    native_time: Optional[NativeTimeSection] = None  # summary.json `native_time`
    native_shares: Optional[Table] = None
    speedscope: Optional[dict[str, Any]] = None
    sample_events: list[dict] = field(default_factory=list)  # X events, ts on perf_counter microseconds
    sample_threads: dict[Any, str] = field(default_factory=dict)
    counter_batches: list[BatchCounters] = field(default_factory=list)
    cpu_counters: Optional[CpuCountersSection] = None  # summary.json `cpu_counters`
    counter_table: Optional[Table] = None
    kernels: Optional[KernelsSection] = None  # summary.json `kernels`
    kernel_by_path: dict[str, str] = field(default_factory=dict)
    verbose_text: Optional[str] = None  # oneDNN's verbose output of the kernels batch
    itt: Optional[dict[str, Any]] = None  # summary.json `itt`

    @property
    def joins_trace(self) -> bool:
        """With sampled stacks, trace.json shows them with the steps and counters; counters alone (the default)
        leave trace.json to benchmark.profiler."""
        return bool(self.sample_events)
