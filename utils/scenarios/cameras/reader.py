"""A camera's own thread: it reads its source and decodes every frame (its decode CPU timed with time.thread_time
around `decode`; a file not played in real time only when a detector asks), then hands each selected frame to the
board, where a busy detector's rule keeps or drops it.
A file in real time starts again at its end, its frames numbered on; a stream that dies ends its reading with the
gap recorded, and the thread stays alive, idle, until the run releases it (so the CPU counters of the window,
which follow the threads alive at its start, keep its time)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, fields
from typing import Callable, Optional

from datasets.dataset_root import DatasetError
from datasets.image_folder import LoadedImage
from datasets.sources.counts import SourceCounts
from datasets.sources.source import Read, Reading
from utils.core.native_thread import name_this_thread
from utils.scenarios.cameras.board import BoardClosed, FrameBoard
from utils.scenarios.cameras.frames import FrameRecord
from utils.scenarios.cameras.sources import Camera

THREAD_NAME = "camera-"  # + the camera's index: its thread's name in /proc and cpu_counters.csv


@dataclass
class CameraFrame:
    """A decoded frame on its way to a detector: the item the pipeline and the writer see (named by its camera),
    and its record."""

    item: LoadedImage
    record: FrameRecord

    @property
    def arrival_s(self) -> float:
        return self.record.arrival_s


@dataclass
class Window:
    """The measured window on time.monotonic(): a frame is measured when it arrives inside it. Set by the run's
    main thread, read by the others."""

    start_s: Optional[float] = None
    end_s: Optional[float] = None  # when the cameras were told to stop

    def measures(self, arrival_s: float) -> bool:
        return (self.start_s is not None and arrival_s >= self.start_s
                and (self.end_s is None or arrival_s < self.end_s))


@dataclass(frozen=True)
class FrameSinks:
    """Where a reader's frames go besides the board: those it dropped, could not decode, or could not hand on."""

    dropped: Callable[[CameraFrame, float], None]
    not_decoded: Callable[[CameraFrame], None]
    unfinished: Callable[[CameraFrame], None]  # decoded, but the board took no more frames


@dataclass
class _Loop:
    number: int = 0
    frames: dict[str, int] = field(default_factory=dict)
    span_s: dict[str, float] = field(default_factory=dict)


class CameraReader:
    def __init__(self, camera: Camera, board: FrameBoard, window: Window, sinks: FrameSinks):
        self.camera, self.board, self.window, self.sinks = camera, board, window, sinks
        self.stopping = threading.Event()
        self.go = threading.Event()  # the thread is alive from the start; its camera starts when this is set
        self.ended = threading.Event()  # its source has ended (or the reader failed)
        self.released = threading.Event()
        self.failure: Optional[BaseException] = None
        self.ended_s: Optional[float] = None  # time.monotonic() when its source ended
        self.end_reason: Optional[str] = None  # why a stream ended early, where its counts cannot say
        self._lock = threading.Lock()
        self._done: list[SourceCounts] = []  # the counts of every reading that ended (one per loop)
        self._reading: Optional[Reading] = None
        self._decode_cpu_s = 0.0
        self._loop = _Loop(0, dict(camera.loop_frames), dict(camera.loop_span_s))

    def run(self) -> None:
        name_this_thread(f"{THREAD_NAME}{self.camera.index}")
        try:
            while not self.go.wait(0.05) and not self.stopping.is_set():
                pass
            self._read()
        except BoardClosed:
            pass
        except BaseException as error:  # kept for the run's main thread
            self.failure = error
        finally:
            self.ended_s = time.monotonic()
            self.board.ended(self.camera.index)
            self.ended.set()
            self.released.wait()

    def stop(self) -> None:
        """Ends the reading at its next read (a stream's: within its read timeout); from any thread."""
        self.stopping.set()
        with self._lock:
            if self._reading is not None:
                self._reading.stop()

    def counts(self) -> SourceCounts:
        """What the source counted so far, over every play of a looping file."""
        with self._lock:
            parts = list(self._done) + ([self._reading.counts()] if self._reading is not None else [])
        return added(parts)

    def decode_cpu_s(self) -> float:
        with self._lock:
            return self._decode_cpu_s

    def _read(self) -> None:
        while not self.stopping.is_set():
            try:
                reading = self.camera.source.open()
            except DatasetError as error:  # a stream that answered at start and no longer does
                self.end_reason = str(error)
                return
            with self._lock:
                self._reading = reading
            try:
                with reading:
                    for read in reading.reads():
                        self._decode(reading, read)
                        if self.stopping.is_set():
                            reading.stop()
            except DatasetError as error:  # a stream's frames grew past dataset.max_pixels
                self.end_reason = str(error)
                return
            finally:
                with self._lock:
                    self._done.append(reading.counts())
                    self._reading = None
            if not self.camera.loops:
                return
            self._loop.number += 1

    def _decode(self, reading: Reading, read: Read) -> None:
        self.board.wait_for_demand(self.camera.index, self.stopping)
        got = time.monotonic()
        started = time.thread_time()
        items = reading.decode(read)
        spent = time.thread_time() - started
        decoded = time.monotonic()
        with self._lock:
            self._decode_cpu_s += spent
        for item in items:
            self._hand_on(item, got, decoded)

    def _hand_on(self, item: LoadedImage, got: float, decoded: float) -> None:
        camera, loop = self.camera, self._loop
        frame, pts_s = item.frame, item.pts_s
        if loop.number and item.path in loop.frames:
            frame = None if frame is None else frame + loop.number * loop.frames[item.path]
            pts_s = None if pts_s is None else pts_s + loop.number * loop.span_s[item.path]
        arrival = item.arrival_s if item.arrival_s is not None else got
        record = FrameRecord(camera.index, frame, pts_s, arrival, decoded, self.window.measures(arrival))
        shown = CameraFrame(LoadedImage(camera.label(item.path), item.image, item.error, frame, pts_s, arrival), record)
        if item.image is None:
            self.sinks.not_decoded(shown)
            return
        try:
            dropped = self.board.offer(camera.index, shown, self.stopping)
        except BoardClosed:
            self.sinks.unfinished(shown)
            raise
        if dropped is not None:
            self.sinks.dropped(dropped, time.monotonic())


def added(parts: list[SourceCounts]) -> SourceCounts:
    """Counts of readings one after another, as one (gaps joined; `ended` from the last)."""
    numbers = {f.name: sum(getattr(part, f.name) for part in parts) for f in fields(SourceCounts)
               if f.name not in ("gaps", "ended")}
    return SourceCounts(**numbers, gaps=tuple(gap for part in parts for gap in part.gaps),
                        ended=parts[-1].ended if parts else None)
