"""Memory and operators per call path, attributed from the profiled batch's events (pure functions, plain data).

Inputs are what torch.profiler recorded on each thread: spans (the call-path ranges opened around every module
and transform call, and the operators), and allocation events (bytes > 0) and frees (bytes < 0) with their
time. Spans on one thread nest; an operator belongs to the innermost call-path range that encloses it.

Memory of a call path, summed over its calls in the profiled batch:
- `alloc_total_bytes`: bytes allocated while its range is open, its child ranges included; frees are not
  subtracted (the allocator traffic the layer causes).
- `net_total_bytes`: allocations minus frees in the same interval, the figure torch.profiler's
  cpu_memory_usage and torchprof report; negative when the layer frees more than it keeps (its input).
- `*_self_bytes`: the same without the intervals of its child call-path ranges (operators it runs itself stay
  in), so self + the children's totals = total.
An event exactly on a range's boundary counts as inside, as torch.profiler counts it.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

from utils.record.layers import LayerProfile, PathMemory, PathOp


@dataclass(frozen=True)
class Span:
    """One profiled interval on one thread: a call-path range (`is_range`) or an operator."""

    name: str
    thread: int
    start_ns: int
    end_ns: int
    is_range: bool
    input_shapes: str = ""


@dataclass(frozen=True)
class Allocation:
    t_ns: int
    nbytes: int  # negative for a free


class _Interval:
    __slots__ = ("span", "owner", "children_ns", "child_ranges")

    def __init__(self, span: Span, owner: _Interval | None):
        self.span = span
        self.owner = owner  # the innermost enclosing call-path range
        self.children_ns = 0
        self.child_ranges: list[_Interval] = []


def _nest(spans: Sequence[Span]) -> list[_Interval]:
    """Intervals of one thread in start order, each knowing its innermost enclosing range and, once all are
    placed, the summed duration of its direct children (for operator self time)."""
    placed: list[_Interval] = []
    stack: list[_Interval] = []
    for span in sorted(spans, key=lambda s: (s.start_ns, -s.end_ns)):
        while stack and span.end_ns > stack[-1].span.end_ns:
            stack.pop()  # it ends before this span does, so it does not contain it
        parent = stack[-1] if stack else None
        owner = parent if parent is None or parent.span.is_range else parent.owner
        interval = _Interval(span, owner)
        if parent is not None:
            parent.children_ns += span.end_ns - span.start_ns
        if span.is_range and owner is not None:
            owner.child_ranges.append(interval)
        placed.append(interval)
        stack.append(interval)
    return placed


class _Allocations:
    """Prefix sums over allocation events in time order: any interval's allocated and net bytes in O(log n)."""

    def __init__(self, allocations: Iterable[Allocation]):
        ordered = sorted(allocations, key=lambda a: a.t_ns)
        self.times = [a.t_ns for a in ordered]
        self.allocated = [0, *accumulate(max(a.nbytes, 0) for a in ordered)]
        self.net = [0, *accumulate(a.nbytes for a in ordered)]

    def between(self, start_ns: int, end_ns: int) -> tuple[int, int]:
        first = bisect.bisect_left(self.times, start_ns)
        last = bisect.bisect_right(self.times, end_ns)
        return self.allocated[last] - self.allocated[first], self.net[last] - self.net[first]


def attribute(spans: Iterable[Span], allocations: Iterable[Allocation],
              output_bytes: Mapping[str, Sequence[int]] | None = None) -> LayerProfile:
    """Memory and operators per call path from one profiled run's spans and allocation events.

    `output_bytes` maps a call path to the bytes of its output tensors, one entry per call."""
    by_thread: dict[int, list[Span]] = {}
    for span in spans:
        by_thread.setdefault(span.thread, []).append(span)
    memory = _Allocations(allocations)
    outputs = output_bytes or {}
    totals: dict[str, list[int]] = {}  # path -> [calls, alloc self, alloc total, net self, net total]
    ops: dict[tuple[str, str], list] = {}  # (path, op) -> [calls, self ns, total ns, input shapes, first start]
    first_seen: dict[str, int] = {}
    for thread_spans in by_thread.values():
        placed = _nest(thread_spans)
        for interval in placed:
            span = interval.span
            if span.is_range:
                first_seen[span.name] = min(first_seen.get(span.name, span.start_ns), span.start_ns)
                allocated, net = memory.between(span.start_ns, span.end_ns)
                children = [memory.between(c.span.start_ns, c.span.end_ns) for c in interval.child_ranges]
                row = totals.setdefault(span.name, [0, 0, 0, 0, 0])
                row[0] += 1
                row[1] += allocated - sum(c[0] for c in children)
                row[2] += allocated
                row[3] += net - sum(c[1] for c in children)
                row[4] += net
            elif interval.owner is not None:
                path = interval.owner.span.name
                duration = span.end_ns - span.start_ns
                row = ops.setdefault((path, span.name), [0, 0, 0, span.input_shapes, span.start_ns])
                row[0] += 1
                row[1] += duration - interval.children_ns
                row[2] += duration
    order = sorted(first_seen, key=lambda path: first_seen[path])
    rank = {path: index for index, path in enumerate(order)}
    memory_rows = tuple(
        PathMemory(path, *totals[path], output_bytes=_mean(outputs.get(path, ()))) for path in order)
    op_rows = tuple(
        PathOp(path, op, row[0], row[1], row[2], row[3])
        for (path, op), row in sorted(ops.items(), key=lambda item: (rank[item[0][0]], -item[1][1], item[1][4])))
    return LayerProfile(memory_rows, op_rows)


def _mean(values: Sequence[int]) -> float | None:
    return sum(values) / len(values) if values else None
