"""Chrome trace (the JSON object form, `{"traceEvents": [...]}`) made loadable by every viewer, and another
profiler's events merged onto its clock. Pure functions over the parsed trace: each returns a new trace and
leaves its argument as it was.

Viewers differ in what they accept. Perfetto and chrome://tracing take string pids and tids. speedscope keys
its profiles by numeric pid and tid, and the few events that torch's exporter gives string ids ("Spans",
"Traces", "") make it fail ("Could not find events for key: undefined"). So every pid and tid becomes an
integer, and every process and thread gets one `process_name` / `thread_name` metadata event.
"""
from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

METADATA = "M"
COMPLETE = "X"
PROCESS_NAME = "process_name"
THREAD_NAME = "thread_name"
PROCESS_SORT_INDEX = "process_sort_index"
TRACK_NAMES = (PROCESS_NAME, THREAD_NAME)
# Clocks further apart than this are different clocks (wall time against time since boot), not drift.
SAME_CLOCK_NS = 3600 * 10**9


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _integer_of(value: Any) -> int | None:
    if _is_integer(value):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _id_order(value: Any) -> tuple:
    number = _integer_of(value)
    return (number is None, number or 0, str(value))


def _numbering(values: Iterable[Any]) -> dict[Any, int]:
    """Integers stay; numeric strings become their number; other strings get numbers above every integer
    among `values`, in sorted order of the strings, so the same trace always gets the same ids."""
    values = set(values)
    numbers = {value: number for value in values if (number := _integer_of(value)) is not None}
    others = sorted((value for value in values if value not in numbers), key=_id_order)
    start = max(numbers.values(), default=0) + 1
    numbers.update({value: start + offset for offset, value in enumerate(others)})
    return numbers


def _metadata(name: str, pid: int, tid: int, ts: float, args: dict) -> dict:
    return {"ph": METADATA, "name": name, "pid": pid, "tid": tid, "ts": ts, "args": args}


def _earliest_ts(events: list[dict]) -> float:
    return min((float(event["ts"]) for event in events if "ts" in event), default=0.0)


def integer_ids(trace: dict) -> dict:
    """Every event's pid and tid as an integer (see `_numbering`). A string id's text is kept as its track's
    name: a `process_name` / `thread_name` event is added where the trace had none for it."""
    trace = copy.deepcopy(trace)
    events = trace["traceEvents"]
    pids = _numbering(event["pid"] for event in events if "pid" in event)
    tids = _numbering(event["tid"] for event in events if "tid" in event)
    named_processes = {pids[event["pid"]] for event in events
                       if event.get("ph") == METADATA and event.get("name") == PROCESS_NAME}
    named_threads = {(pids[event["pid"]], tids[event["tid"]]) for event in events
                     if event.get("ph") == METADATA and event.get("name") == THREAD_NAME}
    added: list[dict] = []
    ts = _earliest_ts(events)
    for event in events:
        pid, tid = event.get("pid"), event.get("tid")
        if pid is not None:
            event["pid"] = pids[pid]
            if _integer_of(pid) is None and pids[pid] not in named_processes and str(pid):
                added.append(_metadata(PROCESS_NAME, pids[pid], 0, ts, {"name": str(pid)}))
                named_processes.add(pids[pid])
        if tid is not None:
            event["tid"] = tids[tid]
            thread = (event.get("pid"), tids[tid])
            if pid is not None and _integer_of(tid) is None and thread not in named_threads and str(tid):
                added.append(_metadata(THREAD_NAME, thread[0], thread[1], ts, {"name": str(tid)}))
                named_threads.add(thread)
    events.extend(added)
    return trace


def name_tracks(trace: dict, process_names: Mapping[int, str], thread_names: Mapping[tuple[int, int], str]) -> dict:
    """One `process_name` per process and one `thread_name` per thread that has events (torch's exporter
    writes some twice). The names given replace the trace's own; a track the trace did not name and no
    argument names gets "process <pid>" / "thread <tid>". Call after `integer_ids`."""
    trace = copy.deepcopy(trace)
    events = trace["traceEvents"]
    known_processes: dict[int, str] = {}
    known_threads: dict[tuple[int, int], str] = {}
    for event in events:
        if event.get("ph") == METADATA and event.get("name") == PROCESS_NAME:
            known_processes.setdefault(event["pid"], str(event.get("args", {}).get("name", "")))
        elif event.get("ph") == METADATA and event.get("name") == THREAD_NAME:
            known_threads.setdefault((event["pid"], event["tid"]), str(event.get("args", {}).get("name", "")))
    kept = [event for event in events if not (event.get("ph") == METADATA and event.get("name") in TRACK_NAMES)]
    processes = sorted({event["pid"] for event in kept if "pid" in event} | set(process_names))
    threads = sorted({(event["pid"], event["tid"]) for event in kept
                      if event.get("ph") != METADATA and "pid" in event and "tid" in event} | set(thread_names))
    ts = _earliest_ts(events)
    names = [_metadata(PROCESS_NAME, pid, 0, ts,
                       {"name": process_names.get(pid) or known_processes.get(pid) or f"process {pid}"})
             for pid in processes]
    names += [_metadata(THREAD_NAME, pid, tid, ts,
                        {"name": thread_names.get((pid, tid)) or known_threads.get((pid, tid)) or f"thread {tid}"})
              for pid, tid in threads]
    trace["traceEvents"] = names + kept
    return trace


def _free_id(trace: dict, key: str) -> int:
    return max((event[key] for event in trace["traceEvents"] if _is_integer(event.get(key))), default=0) + 1


def merge_events(trace: dict, events: Iterable[dict], shift_us: float, process_name: str,
                 thread_names: Mapping[Any, str] | None = None, sort_index: int | None = None) -> dict:
    """Another profiler's events added as a new process named `process_name`, their `ts` moved by `shift_us`
    onto this trace's clock. Each of their threads gets a new tid too: a viewer that follows Linux (Perfetto)
    takes a tid seen in two processes for a thread that ended and was reused. `thread_names` names threads
    by their original tid (others are "thread <tid>"); `sort_index` places the process among the others.
    Call after `integer_ids`."""
    trace = copy.deepcopy(trace)
    events = copy.deepcopy(list(events))
    thread_names = thread_names or {}
    pid, first_tid = _free_id(trace, "pid"), _free_id(trace, "tid")
    tids = {tid: first_tid + offset
            for offset, tid in enumerate(sorted({event["tid"] for event in events if "tid" in event}, key=_id_order))}
    for event in events:
        event["pid"] = pid
        if "tid" in event:
            event["tid"] = tids[event["tid"]]
        if "ts" in event:
            event["ts"] = float(event["ts"]) + shift_us
    ts = _earliest_ts(events)
    events.append(_metadata(PROCESS_NAME, pid, 0, ts, {"name": process_name}))
    events.extend(_metadata(THREAD_NAME, pid, tid, ts, {"name": thread_names.get(original, f"thread {original}")})
                  for original, tid in tids.items())
    if sort_index is not None:
        events.append(_metadata(PROCESS_SORT_INDEX, pid, 0, ts, {"sort_index": sort_index}))
    trace["traceEvents"].extend(events)
    return trace


def trace_origin_ns(trace: dict) -> int:
    """The Unix time (ns) of `ts` 0: recent torch exports count `ts` from `baseTimeNanoseconds`, older ones
    from the Unix epoch."""
    return int(trace.get("baseTimeNanoseconds", 0))


def unix_ns(reported_ns: int, wall_ns: int, monotonic_ns: int) -> int:
    """A start time a library reported, on the Unix clock. `wall_ns` (time.time_ns) and `monotonic_ns`
    (time.monotonic_ns) were read together near that start: whichever of the two the reported time is close
    to is its clock (libstdc++'s high_resolution_clock is the wall clock, libc++'s the monotonic one)."""
    if abs(reported_ns - wall_ns) <= SAME_CLOCK_NS:
        return reported_ns
    if abs(reported_ns - monotonic_ns) <= SAME_CLOCK_NS:
        return reported_ns - monotonic_ns + wall_ns
    raise ValueError(f"a start time of {reported_ns} ns is on neither the wall clock ({wall_ns} ns) nor the "
                     f"monotonic clock ({monotonic_ns} ns)")


def span(event: dict) -> tuple[float, float]:
    start = float(event["ts"])
    return start, start + float(event.get("dur", 0))


def lies_within(inner: dict, outers: Iterable[dict], slack_us: float = 0.0) -> bool:
    """Whether `inner` starts and ends inside one of `outers`."""
    start, end = span(inner)
    return any(outer_start - slack_us <= start and end <= outer_end + slack_us
               for outer_start, outer_end in map(span, outers))


def complete_events(trace: dict, name: str | None = None) -> list[dict]:
    return [event for event in trace["traceEvents"]
            if event.get("ph") == COMPLETE and (name is None or event.get("name") == name)]
