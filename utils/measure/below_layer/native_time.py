"""Where each step's time went, from py-spy's timed stacks: Python, each runtime's native code (native
torch/oneDNN, OpenVINO, ONNX Runtime: the libraries each runtime's spec names), other native code, or waiting. Pure
functions over py-spy's chrometrace events and step records.

py-spy's chrometrace output has, per thread (`tid` = the pthread id), a `B` event when a frame appears in a
sample and an `E` event when it is gone, `ts` in microseconds on py-spy's clock. Between two consecutive
timestamps of a thread its stack is constant: a segment. A segment's category is decided by its innermost frame
that is not glue (the C library, the C++ runtime, the loader, an unresolved address): a Python frame or the
interpreter's own library is Python; a runtime's libraries (its spec's NativeCode: for torch libtorch*, libc10,
oneDNN, MKL, the OpenMP runtime torch ships) are that runtime's; any other library (OpenCV, NumPy) is other
native. An address py-spy could not name that lies in runtime-generated code (oneDNN's
JIT kernels, in anonymous executable memory) counts for the runtime that ran it (`with_jit_frames`). A leaf that
waits (a futex, a condition variable, sleep, poll, a queue or lock wait in Python) is waiting, whatever called it.
A stack of glue only is other native.

Each step record of the timed passes gets the overlap of its interval with the main thread's segments, once
the clock offset is known (`clock_offset_us`).
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pipelines.runtimes.registry import SPECS
from utils.record.steps import RUN_STEP, STEP_FRAME_PREFIX, PassKind, StepRecord

# Fewer segments than this agreeing on an offset leave the marks' estimate in place.
FIT_LEAST = 5
NATIVE = [(re.compile(spec.native.libraries), spec.native) for spec in SPECS.values() if spec.native is not None]
CATEGORIES = ("python", *(native.category for _, native in NATIVE), "other_native", "waiting")
CATEGORY_TITLES = {"python": "Python", **{native.category: native.title for _, native in NATIVE},
                   "other_native": "other native", "waiting": "waiting"}
SHARE_COLUMNS = ("step", "occurrences", "step_ms", "sampled_ms") + tuple(f"{c}_share" for c in CATEGORIES) + (
    "gil_share",)
GLUE = re.compile(r"(^|/)(libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl\.so|\[vdso\]|\?$)")
WAITING = re.compile(r"(futex|pthread_cond_|sem_wait|sem_timedwait|nanosleep|clock_nanosleep|epoll_wait|"
                     r"\bpoll\b|__poll|\bselect\b|pselect|ppoll|\bpause\b|sigtimedwait|"
                     r"^(Condition|Event|Semaphore|Barrier)\.wait$|^Queue\.get$|^(sleep|_wait_for_tstate_lock)$)")
GIL_NOTE = ("py-spy 0.4 marks GIL ownership only as a filter (--gil) over whole recordings, never per sample in "
            "a timed output, so the per-step GIL-holding share cannot be told here")


@dataclass(frozen=True)
class Frame:
    name: str
    filename: str

    @property
    def python(self) -> bool:
        return self.filename.endswith(".py")


@dataclass(frozen=True)
class Segment:
    start_us: float
    end_us: float
    stack: tuple[Frame, ...]  # root first

    @property
    def category(self) -> str:
        return categorize(self.stack)


def categorize(stack: Sequence[Frame]) -> str:
    if not stack:
        return "waiting"
    if WAITING.search(stack[-1].name):
        return "waiting"
    for frame in reversed(stack):
        if frame.python or "libpython" in frame.filename:
            return "python"
        if GLUE.search(frame.filename) or not frame.filename:
            continue
        for libraries, native in NATIVE:
            if libraries.search(frame.filename):
                return native.category
        return "other_native"
    return "other_native"


# Runtime-generated kernels (oneDNN's JIT, in torch and in OpenVINO's CPU plugin) live in anonymous executable
# memory: py-spy cannot name them, nor unwind past them. Their frames stand for the runtime's library.
JIT_LIBRARY = {spec.name: spec.native.jit_library for spec in SPECS.values() if spec.native is not None}
ADDRESS = re.compile(r"^0x([0-9a-fA-F]+)$")


def jit_ranges(maps: str) -> list[tuple[int, int]]:
    """Address ranges of anonymous executable mappings in a /proc/<pid>/maps text."""
    ranges = []
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 5 or "x" not in fields[1]:
            continue
        path = fields[5].strip() if len(fields) == 6 else ""
        if path and not path.startswith("[anon"):
            continue
        low, _, high = fields[0].partition("-")
        ranges.append((int(low, 16), int(high, 16)))
    return sorted(ranges)


def with_jit_frames(segments: Sequence[Segment], ranges: Sequence[tuple[int, int]], backend: str
                    ) -> list[Segment]:
    """The segments with every unnamed frame whose address lies in runtime-generated code renamed for the
    runtime's library, so that it counts for the runtime and not for the Python frame that called it."""
    library = JIT_LIBRARY.get(backend)
    if library is None or not ranges:
        return list(segments)
    lows = [low for low, _ in ranges]
    jit = Frame("runtime-generated kernel", f"[anonymous executable memory of {library}]")

    def renamed(frame: Frame) -> Frame:
        found = ADDRESS.match(frame.name)
        if found is None:
            return frame
        address = int(found.group(1), 16)
        index = bisect.bisect_right(lows, address) - 1
        return jit if index >= 0 and address < ranges[index][1] else frame

    return [Segment(segment.start_us, segment.end_us, tuple(renamed(frame) for frame in segment.stack))
            for segment in segments]


def thread_segments(events: Iterable[Mapping[str, Any]]) -> dict[Any, list[Segment]]:
    """Per thread, its constant-stack stretches from py-spy's B/E events (ts in py-spy's microseconds)."""
    by_thread: dict[Any, list[Mapping[str, Any]]] = {}
    for event in events:
        if event.get("ph") in ("B", "E"):
            by_thread.setdefault(event["tid"], []).append(event)
    segments: dict[Any, list[Segment]] = {}
    for tid, thread_events in by_thread.items():
        stack: list[Frame] = []
        out: list[Segment] = []
        last_ts: Optional[float] = None
        for event in sorted(thread_events, key=lambda e: float(e["ts"])):  # stable: B/E order kept within a ts
            ts = float(event["ts"])
            if last_ts is not None and ts > last_ts and stack:
                out.append(Segment(last_ts, ts, tuple(stack)))
            last_ts = ts
            frame = Frame(str(event.get("name", "")), str((event.get("args") or {}).get("filename", "")))
            if event["ph"] == "B":
                stack.append(frame)
            elif stack:
                # E events close frames innermost first
                stack.pop()
        segments[tid] = out
    return segments


def offset_bounds_us(segments: Sequence[Segment], marks_ns: Sequence[tuple[int, int]], mark_function: str
                     ) -> list[float]:
    """Upper bounds of py-spy's clock minus perf_counter's, in microseconds, one per edge of the clock marks it
    saw: py-spy sees a mark begin and end at its first sample after each edge, so every edge's difference is
    the offset plus a delay >= 0.

    py-spy may see one mark as several stretches (a sample without the mark's frame between two with it), and at
    a low rate miss a short mark altogether. Stretches closer together than half the time between the first and
    the last mark are one mark. A single mark seen is the first or the last by where it lies in the recording:
    py-spy records from just before the first mark until just after the last."""
    marked = [s for s in segments if any(frame.name == mark_function for frame in s.stack)]
    if not marked or not marks_ns:
        return []
    apart_us = (marks_ns[-1][0] - marks_ns[0][1]) / 2e3 if len(marks_ns) > 1 else float("inf")
    seen: list[tuple[float, float]] = []  # per mark seen: from its first stretch's start to its last's end
    for segment in sorted(marked, key=lambda segment: segment.start_us):
        if seen and segment.start_us - seen[-1][1] < apart_us:
            seen[-1] = (seen[-1][0], max(seen[-1][1], segment.end_us))
        else:
            seen.append((segment.start_us, segment.end_us))
    if len(seen) >= 2:
        pairs = [(seen[0], marks_ns[0]), (seen[-1], marks_ns[-1])]
    else:
        first_us = min(segment.start_us for segment in segments)
        last_us = max(segment.end_us for segment in segments)
        nearer_start = seen[0][0] - first_us <= last_us - seen[0][1]
        pairs = [(seen[0], marks_ns[0] if nearer_start else marks_ns[-1])]
    return [bound for (run_start, run_end), (start_ns, end_ns) in pairs
            for bound in (run_start - start_ns / 1e3, run_end - end_ns / 1e3)]


def clock_offset_us(segments: Sequence[Segment], marks_ns: Sequence[tuple[int, int]], mark_function: str,
                    rate_hz: Optional[float] = None) -> Optional[float]:
    """py-spy's clock minus perf_counter's, in microseconds: the tightest of the marks' bounds. py-spy's
    intervals are exponential (memoryless), so each delay is exponential with the sampling rate's mean; with
    `rate_hz` the mean of the smallest of n delays, 1 / (n x rate), is taken off, which leaves it unbiased."""
    bounds = offset_bounds_us(segments, marks_ns, mark_function)
    if not bounds:
        return None
    return min(bounds) - (1e6 / (len(bounds) * rate_hz) if rate_hz else 0.0)


def fitted_offset_us(segments: Sequence[Segment], records: Sequence[StepRecord], around_us: float,
                     within_us: float, least: int = FIT_LEAST) -> Optional[float]:
    """The clock offset, fitted to the steps: a segment whose stack holds a step's frame (STEP_FRAME_PREFIX +
    the step) was first seen inside one occurrence of that step, so the offset lies in [start - occurrence end,
    start - occurrence start] for one of them. Returns the middle of the stretch of offsets, within `within_us`
    of `around_us` (the marks' estimate), that the most segments agree with (of several, the nearest to
    `around_us`); None when fewer than `least` do.
    The marks alone place a sample only to within py-spy's sampling interval; steps are often shorter."""
    occurrences: dict[str, list[tuple[float, float]]] = {}
    for record in records:
        if record.pass_kind is PassKind.TIMED:
            occurrences.setdefault(record.step, []).append((record.start_ns / 1e3, record.end_ns / 1e3))
    # A step's occurrences do not overlap, so sorted by start their ends are sorted too: each segment looks only
    # at the few within reach of the search, not at every occurrence of the run.
    starts, ends = {}, {}
    for step, spans in occurrences.items():
        spans.sort()
        starts[step], ends[step] = [begin for begin, _ in spans], [end for _, end in spans]
    edges: list[tuple[float, int]] = []
    low, high = around_us - within_us, around_us + within_us
    for segment in segments:
        step = innermost_step(segment)
        if step not in occurrences:
            continue
        reach = range(bisect.bisect_left(ends[step], segment.start_us - high),
                      bisect.bisect_right(starts[step], segment.start_us - low))
        for begin, end in (occurrences[step][index] for index in reach):
            first, last = max(segment.start_us - end, low), min(segment.start_us - begin, high)
            if first <= last:
                edges += [(first, 1), (last, -1)]
    ordered = sorted(edges, key=lambda edge: (edge[0], -edge[1]))  # at a tie, a window opens before one closes
    best, count, middles = 0, 0, []
    for position, (offset, change) in enumerate(ordered):
        count += change
        if change > 0 and count >= best:
            middle = (offset + ordered[position + 1][0]) / 2
            middles = [middle] if count > best else middles + [middle]
            best = count
    if best < least:
        return None
    # Steps that repeat alike agree as well one batch apart: of equally good stretches, the marks' nearest.
    return min(middles, key=lambda middle: abs(middle - around_us))


def innermost_step(segment: Segment) -> Optional[str]:
    """The step whose frame is innermost in the segment's stack (outermost first), or None."""
    for frame in reversed(segment.stack):
        if frame.name.startswith(STEP_FRAME_PREFIX):
            return frame.name[len(STEP_FRAME_PREFIX):]
    return None


def step_shares(records: Sequence[StepRecord], segments: Sequence[Segment], offset_us: float,
                order: Sequence[str], tolerance_us: float = 0.0) -> list[dict[str, Any]]:
    """Per step of the timed passes: how its time divides between the categories, from the main thread's
    segments moved onto perf_counter's clock (ts - offset).

    A segment starts at a sample, the one at which py-spy first saw its stack, and the later samples that saw the
    same stack went unstamped. A step counts the segments that start inside it, each up to the step's end: a
    stack first seen before the step began was seen in another step (the stacks hold the steps' own Python
    frames, so a new step shows as a new stack at its first sample). The step's time before its first sample is
    not known, and not counted: shares are of `sampled_ms`. A stack first seen less than `tolerance_us` before
    the step began counts for it too: the clock offset is known only that closely."""
    moved = sorted(((s.start_us - offset_us, s.end_us - offset_us, s.category) for s in segments))
    starts = [start for start, _, _ in moved]
    totals: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    step_ms: dict[str, float] = {}
    for record in records:
        if record.pass_kind is not PassKind.TIMED or record.step == RUN_STEP:
            continue
        begin, end = record.start_ns / 1e3, record.end_ns / 1e3
        sums = totals.setdefault(record.step, dict.fromkeys(CATEGORIES, 0.0))
        counts[record.step] = counts.get(record.step, 0) + 1
        step_ms[record.step] = step_ms.get(record.step, 0.0) + record.ms
        index = bisect.bisect_left(starts, begin - tolerance_us)
        while index < len(moved) and moved[index][0] < end:
            start, stop, category = moved[index]
            sums[category] += max(0.0, min(stop, end) - max(start, begin)) / 1e3
            index += 1
    ranked = {name: position for position, name in enumerate(order)}
    rows = []
    for step in sorted(totals, key=lambda name: ranked.get(name, len(ranked))):
        sums = totals[step]
        sampled = sum(sums.values())
        row: dict[str, Any] = {"step": step, "occurrences": counts[step], "step_ms": step_ms[step],
                               "sampled_ms": sampled}
        row.update({f"{c}_share": (sums[c] / sampled if sampled else None) for c in CATEGORIES})
        row["gil_share"] = None
        rows.append(row)
    return rows


def where_time_went(row: Mapping[str, Any]) -> str:
    """One line for a step: its largest category first, then any other of 10% or more."""
    shares = sorted(((row.get(f"{c}_share") or 0.0, c) for c in CATEGORIES), reverse=True)
    if not row.get("sampled_ms"):
        return f"{row['step']}: no samples (shorter than the sampling interval)"
    parts = [f"{share:.0%} {CATEGORY_TITLES[c]}" for share, c in shares if share >= 0.10] or [
        f"{shares[0][0]:.0%} {CATEGORY_TITLES[shares[0][1]]}"]
    return f"{row['step']}: {', '.join(parts)}"
