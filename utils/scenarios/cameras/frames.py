"""Every frame a camera handed on, as a plain record: which camera and frame, when it arrived, was decoded and
detected (or dropped), and how it ended. The records are what the camera figures are computed from, and the
rows of the per-frame CSV (layout.CAMERA_FRAMES), which grows as frames end."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

DETECTED = "detected"  # its detections came
DROPPED = "dropped"  # a newer frame took its place, or the camera's queue was full
NOT_DECODED = "not_decoded"  # the source named it but could not give it (its data corrupt or missing)
UNFINISHED = "unfinished"  # still waiting when a stop ended the run

FRAME_COLUMNS = ("stream", "frame", "pts_s", "measured", "outcome", "arrival_s", "decoded_s", "detect_start_s",
                 "detect_end_s", "dropped_s", "latency_ms", "batch", "batch_frames", "detections")


@dataclass
class FrameRecord:
    """Times are time.monotonic() seconds; a frame is measured when it arrived inside the window."""

    stream: int
    frame: Optional[int]
    pts_s: Optional[float]
    arrival_s: float
    decoded_s: float
    measured: bool = False
    outcome: Optional[str] = None
    detect_start_s: Optional[float] = None
    detect_end_s: Optional[float] = None
    dropped_s: Optional[float] = None
    batch: Optional[int] = None
    batch_frames: Optional[int] = None
    detections: Optional[int] = None

    @property
    def latency_s(self) -> Optional[float]:
        """From the frame's arrival to its detections."""
        return None if self.detect_end_s is None else self.detect_end_s - self.arrival_s


@dataclass(frozen=True)
class RunClock:
    """time.monotonic() seconds onto the run's clock: seconds since the step timer's origin (perf_counter_ns), as
    steps_timer.csv's start_s, so a frame's times line up with the steps that detected it."""

    perf_minus_monotonic_ns: int
    origin_ns: int

    @classmethod
    def now(cls, origin_ns: int) -> "RunClock":
        monotonic, perf = time.monotonic_ns(), time.perf_counter_ns()
        return cls(perf - monotonic, origin_ns)

    def seconds(self, monotonic_s: Optional[float]) -> Optional[float]:
        if monotonic_s is None:
            return None
        return (monotonic_s * 1e9 + self.perf_minus_monotonic_ns - self.origin_ns) / 1e9

    def perf_ns(self, monotonic_s: float) -> int:
        return round(monotonic_s * 1e9) + self.perf_minus_monotonic_ns


def frame_row(record: FrameRecord, stream_names: list[str], clock: RunClock) -> dict:
    """The record as a row of the per-frame CSV, times on the run's clock."""
    latency = record.latency_s
    return {"stream": stream_names[record.stream], "frame": "" if record.frame is None else record.frame,
            "pts_s": "" if record.pts_s is None else f"{record.pts_s:.6f}", "measured": record.measured,
            "outcome": record.outcome or "",
            **{name: _seconds(clock.seconds(getattr(record, name)))
               for name in ("arrival_s", "decoded_s", "detect_start_s", "detect_end_s", "dropped_s")},
            "latency_ms": "" if latency is None else f"{latency * 1e3:.3f}",
            "batch": "" if record.batch is None else record.batch,
            "batch_frames": "" if record.batch_frames is None else record.batch_frames,
            "detections": "" if record.detections is None else record.detections}


def _seconds(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.6f}"
