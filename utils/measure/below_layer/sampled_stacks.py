"""py-spy's timed stacks in the two forms viewers take: a speedscope file and Chrome trace events, both moved
onto the step timer's clock (perf_counter) by the clock offset of utils.measure.below_layer.native_time."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _by_thread(events: Iterable[Mapping[str, Any]]) -> dict[Any, list[Mapping[str, Any]]]:
    threads: dict[Any, list[Mapping[str, Any]]] = {}
    for event in events:
        if event.get("ph") in ("B", "E"):
            threads.setdefault(event["tid"], []).append(event)
    for thread_events in threads.values():
        thread_events.sort(key=lambda e: float(e["ts"]))  # stable: B/E order within one ts kept
    return threads


def thread_title(tid: Any, main_thread: Any) -> str:
    return "main thread (runs the steps)" if tid == main_thread else f"thread {tid}"


def speedscope_document(events: Iterable[Mapping[str, Any]], offset_us: float, origin_ns: int, main_thread: Any,
                        name: str) -> dict[str, Any]:
    """An evented speedscope profile per thread, times in microseconds since `origin_ns` (the run's step
    clock), so a stretch in speedscope's timeline lines up with steps_timer.csv."""
    frames: list[dict[str, Any]] = []
    index: dict[tuple[str, str], int] = {}
    profiles = []
    origin_us = origin_ns / 1e3
    threads = _by_thread(events)
    for tid in sorted(threads, key=lambda t: (t != main_thread, str(t))):
        opened: list[int] = []
        out = []
        for event in threads[tid]:
            at = float(event["ts"]) - offset_us - origin_us
            if event["ph"] == "B":
                key = (str(event.get("name", "")), str((event.get("args") or {}).get("filename", "")))
                if key not in index:
                    index[key] = len(frames)
                    frames.append({"name": key[0], "file": key[1]})
                opened.append(index[key])
                out.append({"type": "O", "frame": index[key], "at": at})
            elif opened:
                out.append({"type": "C", "frame": opened.pop(), "at": at})
        if not out:
            continue
        end = out[-1]["at"]
        out.extend({"type": "C", "frame": frame, "at": end} for frame in reversed(opened))
        profiles.append({"type": "evented", "name": thread_title(tid, main_thread), "unit": "microseconds",
                         "startValue": out[0]["at"], "endValue": end, "events": out})
    return {"$schema": SPEEDSCOPE_SCHEMA, "shared": {"frames": frames}, "profiles": profiles,
            "name": name, "activeProfileIndex": 0, "exporter": "detbench (from py-spy's chrometrace output)"}


def complete_events(events: Iterable[Mapping[str, Any]], offset_us: float) -> list[dict[str, Any]]:
    """Every frame's stretch as a Chrome trace `X` event, `ts` in perf_counter microseconds."""
    out: list[dict[str, Any]] = []
    for tid, thread_events in _by_thread(events).items():
        opened: list[Mapping[str, Any]] = []
        for event in thread_events:
            if event["ph"] == "B":
                opened.append(event)
            elif opened:
                begin = opened.pop()
                start = float(begin["ts"]) - offset_us
                out.append({"ph": "X", "name": str(begin.get("name", "")), "cat": "py-spy", "tid": tid,
                            "ts": start, "dur": float(event["ts"]) - float(begin["ts"]),
                            "args": {"file": (begin.get("args") or {}).get("filename", "")}})
    return out
