"""The camera figures from plain records: per stream and over all of them, what arrived, was decoded, detected and
dropped, the rate detected, the latency from a frame's arrival to its detections, and the CPU-seconds per frame
split into decode, preprocess, forward and postprocess. Pure arithmetic, no clock read.

The CPU split: decode, preprocess and postprocess are the thread CPU time (time.thread_time) of the threads that
ran them, around the calls themselves; the forward is the process's CPU over the window (time.process_time) minus
those and the writing of the detections. That remainder holds the runtime's own worker threads, which no thread
clock of the caller sees, and whatever else the process ran meanwhile (the recorders' samplers, the main thread's
waits); work a preprocess or postprocess hands to a thread pool is counted there too.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from utils.record.statistics import describe
from utils.scenarios.cameras.frames import DETECTED, DROPPED, NOT_DECODED, UNFINISHED, FrameRecord

CPU_PARTS = ("decode", "preprocess", "forward", "postprocess")
STREAM_COLUMNS = (
    "stream", "source", "arrived", "decoded", "delivered", "detected", "dropped", "not_decoded", "unfinished",
    "drop_share", "fps_delivered", "fps_detected", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms",
    "latency_max_ms", *(f"{part}_cpu_ms_per_frame" for part in CPU_PARTS), "cpu_ms_per_frame", "corrupt_packets",
    "concealed_frames", "connections", "gaps", "gap_s", "ended")
CPU_DEFINITION = (
    "CPU milliseconds per frame: decode is each camera's decoding thread's CPU (time.thread_time around its "
    "decoder) per frame decoded; preprocess and postprocess the detector thread's CPU in those stages, a batch's "
    "shared evenly among its frames, per frame detected; forward the process's CPU over the window "
    "(time.process_time) minus decode, preprocess, postprocess and the writing of detections, per frame detected, "
    "the same for every camera: it holds the runtime's own threads, which no caller's thread clock sees, and "
    "whatever else the process ran meanwhile (the recorders' samplers, work a stage hands to a thread pool).")


@dataclass(frozen=True)
class CpuSeconds:
    """CPU-seconds over the window: the process's, and what the threads' own clocks saw of each part."""

    process: float
    decode: float
    preprocess: float
    postprocess: float
    output: float  # writing the detections

    @property
    def forward(self) -> float:
        """What the process spent beyond the parts its threads' clocks saw; never below 0 (the clocks tick apart)."""
        return max(0.0, self.process - self.decode - self.preprocess - self.postprocess - self.output)


@dataclass(frozen=True)
class StreamCpu:
    """One camera's share: its decoder's CPU, and the preprocess and postprocess CPU of its frames' batches, which
    held `frames` of its frames (the window's timed batches: the frames that CPU was spent on)."""

    decode: float = 0.0
    preprocess: float = 0.0
    postprocess: float = 0.0
    frames: int = 0


@dataclass(frozen=True)
class StreamSource:
    """What a camera's source counted over the window (SourceCounts told apart at its two ends)."""

    arrived: int = 0
    decoded: int = 0
    corrupt_packets: int = 0
    concealed_frames: int = 0
    connections: int = 0
    gaps: int = 0
    gap_s: float = 0.0
    ended: Optional[str] = None


def per_frame_ms(seconds: float, frames: int) -> Optional[float]:
    return seconds * 1e3 / frames if frames else None


def share(part: int, whole: int) -> Optional[float]:
    return part / whole if whole else None


def latency_ms(records: Iterable[FrameRecord]) -> dict[str, Optional[float]]:
    """p50, p90, p99, max and mean of arrival-to-detections latency over the detected frames, in ms (numpy's
    linear interpolation between ranks)."""
    stats = describe([record.latency_s * 1e3 for record in records if record.outcome == DETECTED])
    return {"p50_ms": stats["p50"], "p90_ms": stats["p90"], "p99_ms": stats["p99"], "max_ms": stats["max"],
            "mean_ms": stats["mean"]}


def outcomes(records: Iterable[FrameRecord]) -> Counter:
    return Counter(record.outcome for record in records)


def cpu_ms_per_frame(cpu: StreamCpu, forward_s_per_frame: Optional[float], decoded: int) -> dict[str, Optional[float]]:
    """Each part per frame: decode per frame decoded, the rest per frame detected (cpu.frames); their sum, `cpu`."""
    detected = cpu.frames
    parts = {"decode": per_frame_ms(cpu.decode, decoded), "preprocess": per_frame_ms(cpu.preprocess, detected),
             "forward": None if forward_s_per_frame is None or not detected else forward_s_per_frame * 1e3,
             "postprocess": per_frame_ms(cpu.postprocess, detected)}
    known = [value for value in parts.values() if value is not None]
    return {**parts, "cpu": sum(known) if known else None}


def stream_row(name: str, location: str, records: Sequence[FrameRecord], source: StreamSource, cpu: StreamCpu,
               forward_s_per_frame: Optional[float], window_s: float) -> dict[str, Any]:
    """cameras.csv's row of one camera, from its measured frames."""
    counted = outcomes(records)
    delivered, detected = len(records), counted[DETECTED]
    latency = latency_ms(records)
    per_frame = cpu_ms_per_frame(cpu, forward_s_per_frame, source.decoded)
    return {"stream": name, "source": location, "arrived": source.arrived, "decoded": source.decoded,
            "delivered": delivered, "detected": detected, "dropped": counted[DROPPED],
            "not_decoded": counted[NOT_DECODED], "unfinished": counted[UNFINISHED],
            "drop_share": share(counted[DROPPED], delivered),
            "fps_delivered": delivered / window_s if window_s > 0 else None,
            "fps_detected": detected / window_s if window_s > 0 else None,
            **{f"latency_{key}": latency[key] for key in ("p50_ms", "p90_ms", "p99_ms", "max_ms")},
            **{f"{part}_cpu_ms_per_frame": per_frame[part] for part in CPU_PARTS},
            "cpu_ms_per_frame": per_frame["cpu"], "corrupt_packets": source.corrupt_packets,
            "concealed_frames": source.concealed_frames, "connections": source.connections, "gaps": source.gaps,
            "gap_s": source.gap_s, "ended": source.ended or ""}


def totals(records: Sequence[FrameRecord], sources: Sequence[StreamSource], cpu: CpuSeconds, timed_frames: int,
           window_s: float) -> dict[str, Any]:
    """The figures over every camera: counts, rates, latency over all their frames, and the CPU per frame (per
    frame of the timed batches, `timed_frames`)."""
    counted = outcomes(records)
    delivered, detected = len(records), counted[DETECTED]
    decoded = sum(source.decoded for source in sources)
    whole = StreamCpu(cpu.decode, cpu.preprocess, cpu.postprocess, timed_frames)
    per_frame = cpu_ms_per_frame(whole, cpu.forward / timed_frames if timed_frames else None, decoded)
    return {"arrived": sum(source.arrived for source in sources), "decoded": decoded, "delivered": delivered,
            "detected": detected, "dropped": counted[DROPPED], "not_decoded": counted[NOT_DECODED],
            "unfinished": counted[UNFINISHED], "drop_share": share(counted[DROPPED], delivered),
            "fps_detected": detected / window_s if window_s > 0 else None,
            "latency_ms": {key[:-3]: value for key, value in latency_ms(records).items()},
            "cpu_s": {"process": cpu.process, "decode": cpu.decode, "preprocess": cpu.preprocess,
                      "forward": cpu.forward, "postprocess": cpu.postprocess, "output": cpu.output},
            "cpu_ms_per_frame": per_frame}


def overlap_s(start: float, end: float, window: tuple[float, float]) -> float:
    """How much of [start, end] lies inside the window."""
    return max(0.0, min(end, window[1]) - max(start, window[0]))
