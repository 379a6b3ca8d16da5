"""What a source counts as it reads, as plain data: frames arrived, decoded, handed on, corrupt packets skipped,
and each gap of a live stream (when it began and ended, and why). Counted by the thread that reads the source,
read by any other (a snapshot under a lock)."""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Optional


@dataclass(frozen=True)
class Gap:
    """A time a live source delivered nothing: from `start_s` (time.monotonic() when the failure was seen) to
    `end_s` (the first packet after it, or when the source gave up: `resumed` False)."""

    start_s: float
    end_s: float
    reason: str
    resumed: bool
    attempts: int  # connections tried during the gap


@dataclass(frozen=True)
class SourceCounts:
    arrived: int = 0  # video packets read (one frame's data each)
    decoded: int = 0  # frames the decoder gave out
    delivered: int = 0  # frames selected and handed on as BGR
    not_decoded: int = 0  # items named beforehand that could not be had (a file's frames the decoder never gave
    # out, an undecodable image): handed on as items with their error
    corrupt_packets: int = 0  # packets the demuxer flagged corrupt or the decoder refused: skipped
    concealed_frames: int = 0  # frames the decoder gave out but flagged corrupt (errors concealed): handed on
    connections: int = 0  # successful opens, the first one included
    gaps: tuple[Gap, ...] = ()
    ended: Optional[str] = None  # why the source ended: "end of file", "stopped", or the failure it gave up on


class CountsBook:
    """The mutable side of SourceCounts: one writer thread, any number of readers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = SourceCounts()

    def add(self, **increments: int) -> None:
        with self._lock:
            self._counts = replace(self._counts, **{name: getattr(self._counts, name) + value
                                                    for name, value in increments.items()})

    def gap(self, gap: Gap) -> None:
        with self._lock:
            self._counts = replace(self._counts, gaps=self._counts.gaps + (gap,))

    def end(self, why: str) -> None:
        with self._lock:
            if self._counts.ended is None:
                self._counts = replace(self._counts, ended=why)

    def snapshot(self) -> SourceCounts:
        with self._lock:
            return self._counts
