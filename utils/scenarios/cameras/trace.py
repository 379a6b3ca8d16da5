"""A camera run in trace.json (Chrome trace): one process, one track per camera holding its frames' batches as
`detect` slices, each dropped frame as an instant, and its latency as a counter, so a viewer shows where each
camera's frames waited. Built from the per-frame table alone (times on the run's clock), pure."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from utils.measure.layers.chrome_trace import merge_events

PROCESS = "detbench cameras (one track per camera)"


def _number(value: Any) -> Optional[float]:
    try:
        return None if value in ("", None) else float(value)
    except (TypeError, ValueError):
        return None


def camera_events(rows: Sequence[Mapping[str, Any]], streams: Sequence[str]) -> list[dict]:
    """The measured frames of the per-frame table as events, `ts` in microseconds on the run's clock; the track
    of each camera is its index in `streams`, plus 1."""
    tracks = {name: index + 1 for index, name in enumerate(streams)}
    events, batches = [], set()
    for row in rows:
        if str(row.get("measured")) not in ("True", "true", "1"):
            continue
        tid = tracks.get(row["stream"])
        arrival, start, end = (_number(row.get(key)) for key in ("arrival_s", "detect_start_s", "detect_end_s"))
        if tid is None or arrival is None:
            continue
        if row.get("outcome") == "detected" and start is not None and end is not None:
            if (tid, row.get("batch")) not in batches:  # a batch's frames of one camera share its slice
                batches.add((tid, row.get("batch")))
                events.append({"ph": "X", "name": "detect", "cat": "camera", "tid": tid, "ts": start * 1e6,
                               "dur": (end - start) * 1e6,
                               "args": {"batch": row.get("batch"), "frames": row.get("batch_frames")}})
            events.append({"ph": "C", "name": f"{row['stream']} latency_ms", "tid": tid, "ts": end * 1e6,
                           "args": {"latency_ms": _number(row.get("latency_ms"))}})
        elif row.get("outcome") == "dropped":
            at = _number(row.get("dropped_s")) or arrival
            events.append({"ph": "i", "s": "t", "name": "dropped", "cat": "camera", "tid": tid, "ts": at * 1e6,
                           "args": {"frame": row.get("frame")}})
    return events


def with_cameras(base: Optional[dict], events: list[dict], streams: Sequence[str], shift_us: float) -> dict:
    """`base` (a trace already made for viewers, or None for a new one) with the cameras' process merged, their
    `ts` moved by `shift_us` onto its clock."""
    trace = base if base is not None else {"traceEvents": [], "displayTimeUnit": "ms"}
    return merge_events(trace, events, shift_us, PROCESS, {index + 1: name for index, name in enumerate(streams)})
