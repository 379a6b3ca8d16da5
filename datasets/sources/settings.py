"""The settings a video source takes, typed. The config keys that fill them belong to the config (schema.py);
these only say what each value means and refuse values no source could use."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

RTSP_TRANSPORTS = ("tcp", "udp")


@dataclass(frozen=True)
class FrameSelection:
    """Which decoded frames are handed on: every one (the default), every `stride`-th by index, or at most `fps`
    frames per second of the source's own timestamps. Every frame is decoded either way (the next ones are
    predicted from it); only the handed-on ones are converted to BGR."""

    stride: int = 1
    fps: Optional[float] = None

    def __post_init__(self) -> None:
        if isinstance(self.stride, bool) or not isinstance(self.stride, int) or self.stride < 1:
            raise ValueError(f"stride must be a whole number of at least 1, got {self.stride!r}")
        if self.fps is not None and not (math.isfinite(self.fps) and self.fps > 0):
            raise ValueError(f"fps must be a number above 0, got {self.fps!r}")
        if self.fps is not None and self.stride != 1:
            raise ValueError("choose frames by stride or by fps, not both")


@dataclass(frozen=True)
class DecodeSettings:
    """How frames are decoded. `threads` is the decoder's own thread count (0: FFmpeg picks one per core); 1
    by default, since the detector's threads own the cores and one decoder thread per camera is how many run."""

    threads: int = 1
    max_pixels: Optional[int] = None  # dataset.max_pixels: a source whose frames are larger is refused
    selection: FrameSelection = field(default_factory=FrameSelection)

    def __post_init__(self) -> None:
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ValueError(f"threads must be a whole number of at least 0, got {self.threads!r}")


@dataclass(frozen=True)
class StreamSettings:
    """How a live source is read: every blocking call is bounded by one of these timeouts, and a stream that
    stalls or ends is opened again at most `reconnects` times, `reconnect_delay_s` apart. `realtime` plays a
    file at its own frame rate, as a camera would deliver it."""

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 5.0
    reconnects: int = 3
    reconnect_delay_s: float = 1.0
    realtime: bool = False
    rtsp_transport: str = "tcp"  # tcp: no lost packets, as NVRs advise; udp: what some cameras only offer

    def __post_init__(self) -> None:
        for name in ("connect_timeout_s", "read_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a number of seconds above 0, got {value!r}")
        if not (math.isfinite(self.reconnect_delay_s) and self.reconnect_delay_s >= 0):
            raise ValueError(f"reconnect_delay_s must be a number of seconds, at least 0, got {self.reconnect_delay_s!r}")
        if isinstance(self.reconnects, bool) or not isinstance(self.reconnects, int) or self.reconnects < 0:
            raise ValueError(f"reconnects must be a whole number of at least 0, got {self.reconnects!r}")
        if self.rtsp_transport not in RTSP_TRANSPORTS:
            raise ValueError(f"rtsp_transport must be one of {', '.join(RTSP_TRANSPORTS)}, got {self.rtsp_transport!r}")
