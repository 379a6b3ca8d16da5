"""A camera run's figures into the run record: summary.json `cameras` (typed in utils/record/sections.py),
cameras.csv's rows (one per camera), the per-frame table, and a warning for every camera whose source gave up
inside the window or whose file's B-frames delay every frame."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from datasets.sources.counts import Gap, SourceCounts
from utils.config.schema import CAMERAS, PER_STREAM
from utils.record.run_record import RunRecord, Table
from utils.record.sections import MEASURED, UNAVAILABLE, CamerasSection, ScenarioSection
from utils.scenarios.cameras.figures import (
    CPU_DEFINITION,
    STREAM_COLUMNS,
    CpuSeconds,
    StreamCpu,
    StreamSource,
    overlap_s,
    stream_row,
    totals,
)
from utils.scenarios.cameras.frames import FRAME_COLUMNS, FrameRecord, RunClock, frame_row
from utils.scenarios.cameras.settings import CameraSettings
from utils.scenarios.cameras.sources import Camera, reorder_warning
from utils.storage import layout

DEFINITION = (
    "A frame is measured when it arrives inside the window (from warmup_s after the cameras started, for "
    "duration_s or until every source ended); frames still waiting when the cameras stop are detected before the "
    "window closes. Per camera: arrived and decoded are its source's own counts (packets read, frames its decoder "
    "gave out); delivered, the frames handed to the detector (after cameras.fps); each delivered frame ends "
    "detected, dropped (a busy detector's rule, cameras.when_busy), not decoded, or unfinished (a stop). fps are "
    "per second of the window; latency runs from a frame's arrival (its packet read, time.monotonic()) to the end "
    "of its batch's pipeline step.")
FIGURE = "frames/s detected, with the latency from arrival (p99) and the share dropped (summary.json cameras)"
# Why a source ended that is no failure of it: the window's own end, or a file read to its end.
QUIET_ENDS = ("stopped", "end of file", "end of files", "end of stream", "no frame selected")


@dataclass
class WindowEnds:
    """What each camera's source had counted and its decoder had spent at the window's start and close, and the
    process's CPU then (time.monotonic() and time.process_time() seconds)."""

    start_s: Optional[float] = None
    end_s: Optional[float] = None  # when the cameras stopped, or the last source ended
    closed_s: Optional[float] = None  # when the detectors had finished the frames left
    counts: list[list[SourceCounts]] = field(default_factory=list)  # [at start, at close]
    decode_s: list[list[float]] = field(default_factory=list)
    process_s: list[float] = field(default_factory=list)

    def mark(self, counts: list[SourceCounts], decode_s: list[float], process_s: float) -> None:
        self.counts.append(counts)
        self.decode_s.append(decode_s)
        self.process_s.append(process_s)

    @property
    def complete(self) -> bool:
        return len(self.process_s) == 2 and self.start_s is not None and self.end_s is not None


@dataclass(frozen=True)
class CameraOutcome:
    """Everything the run measured, as plain data, for the record."""

    cameras: Sequence[Camera]
    settings: CameraSettings
    ends: WindowEnds
    records: Sequence[FrameRecord]  # every frame that ended, warm-up included
    stage_cpu_s: Sequence[dict[str, float]]  # per camera, its frames' share of preprocess and postprocess
    timed_frames: Sequence[int]  # per camera, its frames in timed batches
    output_cpu_s: float
    end_reasons: Sequence[Optional[str]]  # per camera, why its reader gave up where its counts cannot say
    clock: RunClock


def stream_source(start: SourceCounts, end: SourceCounts, window: tuple[float, float],
                  reason: Optional[str]) -> StreamSource:
    gaps = [gap for gap in end.gaps if overlap_s(gap.start_s, max(gap.end_s, gap.start_s), window) > 0
            or window[0] <= gap.start_s <= window[1]]
    return StreamSource(end.arrived - start.arrived, end.decoded - start.decoded,
                        end.corrupt_packets - start.corrupt_packets, end.concealed_frames - start.concealed_frames,
                        end.connections - start.connections, len(gaps),
                        sum(overlap_s(gap.start_s, gap.end_s, window) for gap in gaps), reason or end.ended)


def _gap(name: str, gap: Gap, clock: RunClock) -> dict:
    return {"stream": name, "start_s": clock.seconds(gap.start_s), "end_s": clock.seconds(gap.end_s),
            "reason": gap.reason, "resumed": gap.resumed, "attempts": gap.attempts}


def camera_record(record: RunRecord, outcome: CameraOutcome) -> None:
    """summary.json `cameras`, cameras.csv, the per-frame table, and the warnings, into the record."""
    names = [camera.name for camera in outcome.cameras]
    record.camera_frames = Table([frame_row(frame, names, outcome.clock) for frame in outcome.records],
                                 FRAME_COLUMNS)
    ends, settings = outcome.ends, outcome.settings
    detectors = len(outcome.cameras) if settings.detector == PER_STREAM else 1
    record.scenario = ScenarioSection(name=CAMERAS, figure=FIGURE, streams=detectors,
                                      driver=f"detbench: a thread per camera, {detectors} detector thread(s)")
    record.cameras = CamerasSection(status=UNAVAILABLE, settings=_settings(settings), files=_files())
    if not ends.complete:
        record.cameras["reason"] = "the run stopped before its window closed: cameras_frames.csv holds every frame"
        return
    window_s = ends.end_s - ends.start_s
    measured = [frame for frame in outcome.records if frame.measured]
    sources = [stream_source(start, end, (ends.start_s, ends.closed_s), reason)
               for start, end, reason in zip(*ends.counts, outcome.end_reasons)]
    stage = [StreamCpu(end - start, cpu["preprocess"], cpu["postprocess"], frames)
             for start, end, cpu, frames in zip(*ends.decode_s, outcome.stage_cpu_s, outcome.timed_frames)]
    cpu = CpuSeconds(ends.process_s[1] - ends.process_s[0], sum(part.decode for part in stage),
                     sum(part.preprocess for part in stage), sum(part.postprocess for part in stage),
                     outcome.output_cpu_s)
    timed = sum(outcome.timed_frames)
    forward_per_frame = cpu.forward / timed if timed else None
    rows = [stream_row(camera.name, camera.location, [frame for frame in measured if frame.stream == index],
                       sources[index], stage[index], forward_per_frame, window_s)
            for index, camera in enumerate(outcome.cameras)]
    record.camera_streams = Table(rows, STREAM_COLUMNS)
    gaps = [_gap(camera.name, gap, outcome.clock) for camera, end in zip(outcome.cameras, ends.counts[1])
            for gap in end.gaps if gap.end_s >= ends.start_s]
    record.cameras.update(status=MEASURED, definition=DEFINITION, cpu_definition=CPU_DEFINITION,
                          window_s=window_s, drain_s=ends.closed_s - ends.end_s,
                          window={"start_s": outcome.clock.seconds(ends.start_s),
                                  "end_s": outcome.clock.seconds(ends.end_s)},
                          total=totals(measured, sources, cpu, timed, window_s), streams=rows, gaps=gaps)
    if not measured:
        record.cameras.update(status=UNAVAILABLE, reason="no frame arrived inside the window (every source had "
                                                          "ended during the warm-up?)")
    for camera in outcome.cameras:
        reordering = reorder_warning(camera)
        if reordering:
            record.warn(reordering)
    for camera, source in zip(outcome.cameras, sources):
        if source.ended and source.ended not in QUIET_ENDS:
            record.warn(f"camera {camera.name} ({camera.location}) stopped delivering inside the window: "
                        f"{source.ended}; its gaps are in summary.json cameras.gaps, its figures cover what it "
                        "delivered")


def _settings(settings: CameraSettings) -> dict:
    return {"cameras": len(settings.locations), "detector": settings.detector, "when_busy": settings.busy.mode,
            "queue_frames": settings.busy.frames, "realtime": settings.realtime, "fps": settings.decode.selection.fps,
            "duration_s": settings.duration_s, "warmup_s": settings.warmup_s, "batch_size": settings.batch_size,
            "decoder_threads": settings.decode.threads}


def _files() -> dict:
    return {"streams": layout.CAMERAS, "frames": layout.CAMERA_FRAMES, "plot": layout.CAMERAS_PLOT,
            "trace": layout.TRACE}
