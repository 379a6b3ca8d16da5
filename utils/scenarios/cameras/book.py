"""The run's ledger of frames, shared by the camera and detector threads: each frame's record as it ends
(detected, dropped, not decoded, unfinished), appended to the per-frame CSV at once, the detections of every
measured frame written to detections.csv, each camera's share of the detector's CPU, and the few frames kept
for after the window (the layer-timing pass's batches, each camera's last annotated frame, the first camera's first
frames of the window for the annotated clip)."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from datasets.image_folder import LoadedImage
from pipelines.contract import Detections
from utils.detections.clip import ClipFrames, write_clip
from utils.detections.writer import DetectionWriter
from utils.measure.steps.journal import RowJournal
from utils.scenarios.cameras.frames import DETECTED, DROPPED, NOT_DECODED, UNFINISHED, FrameRecord, RunClock, frame_row
from utils.scenarios.cameras.reader import CameraFrame


@dataclass(frozen=True)
class BatchRun:
    """One detector batch as it ran: its index among all detectors' batches, when it started and ended
    (time.monotonic()), whether it ran in the window, and the CPU its thread spent in each stage group."""

    index: int
    start_s: float
    end_s: float
    timed: bool
    cpu_s: dict[str, float]  # preprocess, forward, postprocess: the detector thread's own CPU


class FrameBook:
    def __init__(self, names: Sequence[str], clock: RunClock, journal: RowJournal, writer: DetectionWriter,
                 held_batches: int, clip: Optional[ClipFrames] = None):
        self.names, self.clock, self.journal, self.writer = list(names), clock, journal, writer
        self.held_batches = held_batches
        self.clip = clip  # the first camera's measured frames and their detections, as they come
        self.records: list[FrameRecord] = []
        self.stage_cpu_s = [{"preprocess": 0.0, "postprocess": 0.0} for _ in names]  # timed batches, per camera
        self.timed_frames = [0] * len(names)  # frames each camera had in timed batches
        self.output_cpu_s = 0.0  # writing the detections of timed batches
        self.last: dict[int, tuple[LoadedImage, Detections]] = {}  # each camera's last measured frame detected
        self.held: list[tuple[int, list[LoadedImage]]] = []  # the window's first batches, for the layer pass
        self.detected_frames = 0  # every frame detected so far, warm-up included (the progress bar)
        self._lock = threading.Lock()

    def dropped(self, frame: CameraFrame, at_s: float) -> None:
        frame.record.outcome, frame.record.dropped_s = DROPPED, at_s
        self._ended([frame.record])

    def not_decoded(self, frame: CameraFrame) -> None:
        frame.record.outcome = NOT_DECODED
        with self._lock:
            if frame.record.measured:
                self.writer.write_skipped(frame.item)
                self.writer.flush()
        self._ended([frame.record])

    def unfinished(self, frame: CameraFrame) -> None:
        frame.record.outcome = UNFINISHED
        self._ended([frame.record])

    def detected(self, frames: Sequence[CameraFrame], detections: Optional[list[Detections]], batch: BatchRun) -> None:
        """A batch's frames with their detections; a timed batch's CPU is shared evenly among its frames."""
        for frame, found in zip(frames, detections or [None] * len(frames)):
            record = frame.record
            record.outcome, record.detect_start_s, record.detect_end_s = DETECTED, batch.start_s, batch.end_s
            record.batch, record.batch_frames = batch.index, len(frames)
            record.detections = None if found is None else len(found)
        measured = [(frame, found) for frame, found in zip(frames, detections or []) if frame.record.measured]
        with self._lock:
            if batch.timed:
                for frame in frames:
                    cpu = self.stage_cpu_s[frame.record.stream]
                    for part in cpu:
                        cpu[part] += batch.cpu_s.get(part, 0.0) / len(frames)
                    self.timed_frames[frame.record.stream] += 1
                if len(self.held) < self.held_batches:
                    self.held.append((batch.index, [frame.item for frame in frames]))
            started = time.thread_time()
            if measured:
                self.writer.write_batch([frame.item for frame, _ in measured], [found for _, found in measured],
                                        pictures=False)
                self.writer.flush()
            if batch.timed:
                self.output_cpu_s += time.thread_time() - started
            for frame, found in measured:
                self.last[frame.record.stream] = (frame.item, found)
            self.detected_frames += len(frames)
        if self.clip is not None and not self.clip.full:
            for frame, found in measured:
                if frame.record.stream == 0:
                    self.clip.offer(frame.item.image, found, frame.item.pts_s)
        self._ended([frame.record for frame in frames])

    def pictures(self) -> None:
        """Each camera's last measured frame, annotated, under images/ (annotating every frame would take the
        CPU the cameras are measured on)."""
        with self._lock:
            last = [self.last[stream] for stream in sorted(self.last)]
            if last:
                self.writer.write_pictures([item for item, _ in last], [found for _, found in last])

    def write_clip(self, path: Path) -> Optional[dict]:
        """The kept frames drawn and encoded (utils/detections/clip.py), after the window; what was written, for
        summary.json, or None when there is no clip (none asked for, no images saved, no frame kept)."""
        if self.clip is None or self.writer.images_dir is None or not self.clip.frames:
            return None
        written = write_clip(self.clip.frames, path, self.writer.names, self.writer.note)
        return {"path": written.name + ("/" if written.is_dir() else ""), "frames": len(self.clip.frames),
                "stream": self.names[0], "encoded": written.is_file()}

    def _ended(self, records: Sequence[FrameRecord]) -> None:
        rows = [frame_row(record, self.names, self.clock) for record in records]
        with self._lock:
            self.records.extend(records)
        self.journal.append(rows)

    def snapshot(self) -> list[FrameRecord]:
        with self._lock:
            return list(self.records)
