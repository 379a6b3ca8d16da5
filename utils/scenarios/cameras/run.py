"""One camera run: the detectors warm their input shapes up, the cameras start, the warm-up runs for warmup_s,
then the window opens (the timed passes' recorders listening) and measures for duration_s or until every source
has ended; the cameras stop, the detectors finish what waits, and the window closes. Its figures go into the run
record; the layer-timing pass and the profiled batch then time the window's first batches again."""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Iterator, Sequence

from datasets.image_folder import LoadedImage
from utils.config.schema import PER_STREAM
from utils.measure.steps.journal import RowJournal
from utils.record.run_record import RunRecord
from utils.record.steps import PassKind
from utils.detections.clip import ClipFrames
from utils.scenarios.cameras.board import FrameBoard
from utils.scenarios.cameras.book import FrameBook
from utils.scenarios.cameras.detector import BatchGate, Detector, DetectorPlan, DetectorShared, ShapeBook, batch_numbers
from utils.scenarios.cameras.frames import FRAME_COLUMNS, RunClock
from utils.scenarios.cameras.reader import CameraReader, FrameSinks, Window
from utils.scenarios.cameras.record import CameraOutcome, WindowEnds, camera_record
from utils.scenarios.cameras.settings import CameraSettings
from utils.scenarios.cameras.sources import Camera
from utils.scenarios.contract import ScenarioRun
from utils.scenarios.pass_plan import PlannedPass
from utils.scenarios.runner import PassRunner
from utils.scenarios.single_stream.passes import SingleStreamPasses
from utils.storage import layout

TICK_S = 0.1  # the main thread's waits: a stop signal, a failed thread and the progress bar are seen this often
# A stopped camera ends at its next read: a stream's within its read timeout; past this margin more, the run goes on.
STOP_MARGIN_S = 2.0


@dataclass(frozen=True)
class HeldBatches:
    """Batches kept from the window, by their batch index, as the pass runner loads a dataset's batches."""

    batches: tuple[tuple[int, list[LoadedImage]], ...]

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[list[LoadedImage]]:
        return iter(batch for _, batch in self.batches)

    def load(self, index: int) -> list[LoadedImage]:
        return dict(self.batches)[index]

    def at(self, indices: Sequence[int]) -> Iterator[list[LoadedImage]]:
        return map(self.load, indices)

    @property
    def indices(self) -> tuple[int, ...]:
        return tuple(index for index, _ in self.batches)


class CameraRun:
    def __init__(self, cameras: Sequence[Camera], settings: CameraSettings, run: ScenarioRun):
        self.cameras, self.settings, self.run_parts = list(cameras), settings, run
        context = run.context
        self.record: RunRecord = context.record
        self.timer = context.runner.timer
        self.clock = RunClock.now(self.timer.origin_ns)
        names = [camera.name for camera in self.cameras]
        self.journal = RowJournal(run.run_dir / layout.CAMERA_FRAMES, FRAME_COLUMNS)
        held = settings.layer_batches if settings.layer_timing or settings.profiler else 0
        clip = ClipFrames(settings.clip_frames) if settings.clip_frames else None
        self.book = FrameBook(names, self.clock, self.journal, context.detections, held, clip)
        self.window = Window()
        policies = [settings.policy(camera.arrives) for camera in self.cameras]
        self.board = FrameBoard(policies)
        sinks = FrameSinks(self.book.dropped, self.book.not_decoded, self.book.unfinished)
        self.readers = [CameraReader(camera, self.board, self.window, sinks) for camera in self.cameras]
        self.timed = False
        self.shapes = ShapeBook()
        groups = ([(index,) for index in range(len(self.cameras))] if settings.detector == PER_STREAM
                  else [tuple(range(len(self.cameras)))])
        self.gate = BatchGate(len(groups))
        shared = DetectorShared(self.board, self.book, self.gate, self.shapes, lambda: self.timed, *batch_numbers())
        self.detectors = [
            Detector(DetectorPlan(index, group, self.timer if index == 0 else self.timer.sibling(),
                                  min(settings.batch_size, sum(policies[camera].frames for camera in group)),
                                  _one_frame_per_size([self.cameras[camera].first_frame for camera in group])),
                     run.built.pipeline, shared, settings.batch_size)
            for index, group in enumerate(groups)]
        self.ends = WindowEnds()
        self._threads: list[threading.Thread] = []
        self._progressed = 0

    def run(self) -> None:
        try:
            self._start()
            self._warm_up()
            self._measure()
        finally:  # whatever ended the run: every frame that ended is in the journal and the record
            self._release()
            self.journal.close()
            self._record()
        self.run_parts.context.after_pass(PlannedPass(PassKind.TIMED, 0, None))
        self.book.pictures()
        self._clip()
        self._timed_again()

    def _record(self) -> None:
        book, record, writer = self.book, self.record, self.run_parts.context.detections
        frames = book.snapshot()
        camera_record(record, CameraOutcome(
            self.cameras, self.settings, self.ends, frames, book.stage_cpu_s, book.timed_frames, book.output_cpu_s,
            [reader.end_reason for reader in self.readers], self.clock))
        record.warmup = self._warmup_document()
        record.images.found = sum(1 for frame in frames if frame.measured)
        record.images.processed, record.images.skipped = writer.images_written, writer.skipped
        record.images.detections = writer.detections_written

    def _warmup_document(self) -> dict:
        """summary.json `warmup`: the shapes each detector warmed before the cameras started, the seconds the
        cameras ran before the window, and the timed batches of a shape neither ran (reported apart)."""
        return {"mode": "cameras", "seconds": self.settings.warmup_s,
                "detectors": [detector.warmed for detector in self.detectors if detector.warmed is not None],
                "input_shapes": len(self.shapes.warm), "cold_shapes": list(self.shapes.cold)}

    def _start(self) -> None:
        """Detectors first, each warm before the cameras start: a shape's first run is no camera's wait."""
        self.run_parts.context.console(
            f"cameras: {len(self.cameras)} camera(s), {len(self.detectors)} detector(s) "
            f"({self.settings.detector}), busy detector: {self.settings.busy.mode}; warm-up {self.settings.warmup_s:g} "
            f"s, then a window of {self.settings.duration_s:g} s; frames go to {layout.CAMERA_FRAMES}")
        for detector in self.detectors:
            self._thread(detector.run, f"detector-{detector.plan.index}")
        while not all(detector.ready.wait(TICK_S) for detector in self.detectors):
            pass
        self._raise_failures()
        for reader in self.readers:
            self._thread(reader.run, f"camera-{reader.camera.index}")

    def _go(self) -> None:
        for reader in self.readers:
            reader.go.set()

    def _thread(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _warm_up(self) -> None:
        """The cameras run warmup_s before the window; without a warm-up they start as it opens, so that every
        frame is measured."""
        progress = self.run_parts.context.progress
        progress.grow(None)
        if self.settings.warmup_s > 0:
            progress.start(PassKind.WARMUP)
            self._go()
            self._wait(self.settings.warmup_s)

    def _measure(self) -> None:
        recorders, progress = self.run_parts.context.runner.recorders, self.run_parts.context.progress
        with ExitStack() as stack:
            with self.gate.held():
                stack.enter_context(recorders.listening(PassKind.TIMED))
                self.window.start_s = self.ends.start_s = time.monotonic()
                self._mark_ends()
                self.timed = True
            self._go()
            progress.start(PassKind.TIMED)
            stopped = True
            try:
                self._wait(self.settings.duration_s)
                stopped = False
            finally:
                now = time.monotonic()
                ended = [reader.ended_s for reader in self.readers]
                self.window.end_s = self.ends.end_s = max(ended) if None not in ended else now
                self._stop_cameras(wait=not stopped)
                if stopped:
                    for _, frame in self.board.clear():
                        self.book.unfinished(frame)
                with self.gate.held():  # the detectors have taken every frame left, and stopped
                    self.timed = False
                    self.ends.closed_s = time.monotonic()
                    self._mark_ends()
        self.record.timed_passes = 1

    def _mark_ends(self) -> None:
        self.ends.mark([reader.counts() for reader in self.readers],
                       [reader.decode_cpu_s() for reader in self.readers], time.process_time())

    def _wait(self, seconds: float) -> None:
        """Until `seconds` have passed or every source has ended; the progress bar and stops meanwhile."""
        deadline = time.monotonic() + seconds
        on_batch = self.run_parts.context.runner.on_batch
        while time.monotonic() < deadline and not all(reader.ended.is_set() for reader in self.readers):
            time.sleep(min(TICK_S, max(0.0, deadline - time.monotonic())))
            self._raise_failures()
            detected = self.book.detected_frames
            on_batch(detected - self._progressed)  # a stop signal Python dropped is raised here
            self._progressed = detected

    def _stop_cameras(self, wait: bool) -> None:
        for reader in self.readers:
            reader.stop()
        if wait:
            deadline = time.monotonic() + self.settings.stream.read_timeout_s + STOP_MARGIN_S
            while time.monotonic() < deadline and not all(reader.ended.is_set() for reader in self.readers):
                time.sleep(TICK_S / 2)
        self.board.close()

    def _raise_failures(self) -> None:
        for worker in (*self.detectors, *self.readers):
            if worker.failure is not None:
                raise worker.failure

    def _release(self) -> None:
        """The cameras stopped and every thread ended (after the window's bracket has closed)."""
        for reader in self.readers:
            reader.stop()
        self.board.close()
        for worker in (*self.readers, *self.detectors):
            worker.released.set()
        for thread in self._threads:
            thread.join(timeout=self.settings.stream.read_timeout_s + STOP_MARGIN_S)

    def _clip(self) -> None:
        """The annotated clip, from the frames kept in the window, now that it is closed (summary.json cameras.clip)."""
        written = self.book.write_clip(self.run_parts.run_dir / layout.CAMERAS_CLIP)
        self.book.clip = None  # its frames' memory goes back before the passes after the window
        if written is not None and self.record.cameras is not None:
            self.record.cameras["clip"] = written

    def _timed_again(self) -> None:
        """The layer-timing pass and the profiled batch, over batches the window ran, under their indices."""
        held = HeldBatches(tuple(self.book.held))
        if not held.batches:
            return
        parts, record = self.run_parts, self.record
        context = parts.context
        pipeline = parts.built.pipeline
        runner = PassRunner(pipeline, held, held, context.runner.recorders, record.images,
                            on_batch=context.runner.on_batch)
        passes = SingleStreamPasses(parts.plan, replace(context, runner=runner), pipeline, parts.built.runtime)
        if self.settings.layer_timing:
            planned = PlannedPass(PassKind.LAYERS, 0, len(held), batch_indices=held.indices)
            context.progress.start(planned.kind)
            passes.layers(planned)
            context.after_pass(planned)
        if self.settings.profiler:
            planned = PlannedPass(PassKind.PROFILER, 0, 1, batch_indices=held.indices[:1])
            context.progress.start(planned.kind)
            passes.profiler(planned)
            context.after_pass(planned)


def _one_frame_per_size(frames: Sequence) -> tuple:
    sizes: dict[tuple, object] = {}
    for frame in frames:
        sizes.setdefault(frame.shape[:2], frame)
    return tuple(sizes.values())
