"""PassRunner: runs the pipeline over the data once per planned pass, timing every step from outside, with
the recorders that listen in the pass's kind (utils/measure/listening.py)."""
from __future__ import annotations

import functools
import signal
from contextlib import AbstractContextManager, closing, nullcontext
from typing import Callable, Iterable, Iterator, Optional, Sequence

from torch.utils.data import DataLoader

from datasets.item_batches import ItemBatches
from pipelines.contract import DetectionPipeline
from utils.core.interruption import STOP_SIGNALS
from utils.scenarios.pass_plan import PlannedPass
from utils.measure.listening import PassRecorders
from utils.measure.steps.step_frames import in_step_frame
from utils.measure.steps.timed_batch import BatchResult, PassPlace, batch_loop, run_stages
from utils.record.run_record import ImageCounts
from utils.record.steps import ANNOTATE_STEP, LOAD_STEP
from utils.measure.steps.module_steps import ModuleSteps
from utils.detections.writer import DetectionWriter


class PassRunner:
    def __init__(self, pipeline: DetectionPipeline, loader: Iterable, dataset: ItemBatches, recorders: PassRecorders,
                 counts: ImageCounts, on_batch: Callable[[int], None] = lambda images: None,
                 fetch_step: str = LOAD_STEP):
        """`loader` runs the passes over the whole dataset in order (image files: the DataLoader and its workers;
        video frames: the batches themselves, each pass decoding again); `dataset` loads the batches of a pass
        that picks its own. `on_batch(images)` follows every batch (the progress bar); `fetch_step` is what
        fetching a batch is timed as (utils.record.steps.FETCH_STEPS)."""
        self.pipeline = pipeline
        self.loader = loader
        self.dataset = dataset
        self.batches = len(dataset)
        self.recorders = recorders
        self.timer = recorders.timer
        self.counts = counts
        self.on_batch = on_batch
        self.fetch_step = fetch_step
        self.stages = pipeline.stages()

    def run(self, planned: PlannedPass, writer: Optional[DetectionWriter] = None) -> None:
        if planned.batch_indices is not None:
            indices: Sequence[int] = planned.batch_indices
            batches = iter(self.dataset.at(indices))
        else:
            indices = range(self.batches if planned.max_batches is None else min(planned.max_batches, self.batches))
            batches = iter(self.loader)
        place = PassPlace(planned.kind, planned.index, planned.cold_batches, self.fetch_step)
        with _closed_after(batches), self.recorders.listening(planned.kind), \
                ModuleSteps(self.timer, self.pipeline.forward_parts()):
            for result in batch_loop(batches, indices, self._run_stages, self.timer, place):
                if writer is not None:
                    self._write(writer, result)
                self.on_batch(len(result.samples))

    def _run_stages(self, images: list) -> list:
        return run_stages(self.stages, self.timer, images)

    def _write(self, writer: DetectionWriter, result: BatchResult) -> None:
        try:
            for sample in result.samples:
                if sample.image is None:
                    writer.write_skipped(sample)
            if result.valid:
                with self.timer.step(ANNOTATE_STEP):
                    in_step_frame(ANNOTATE_STEP, writer.write_batch, result.valid, result.output)
            writer.flush()  # the batch's rows reach the disk as it ends, outside its timing
        finally:
            # Also when a stop cuts the batch short: the counts in summary.json match the rows written.
            self.counts.processed = writer.images_written
            self.counts.skipped = writer.skipped
            self.counts.detections = writer.detections_written


def _closed_after(batches: Iterator) -> AbstractContextManager:
    """A video's reading closes as its pass ends, read to its end or not; a loader's iterator has nothing to close."""
    return closing(batches) if hasattr(batches, "close") else nullcontext()


def _ignore_stop_signals(worker_id: int, then: Optional[Callable[[int], None]] = None) -> None:
    for number in STOP_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    if then is not None:
        then(worker_id)


def leave_stops_to_the_main_process(loader: DataLoader) -> DataLoader:
    """Make the loader's workers ignore the stop signals: the main process ends the passes, then shuts them
    down. Ctrl-C at a terminal, a SIGTERM sent to the whole process group (service managers, batch
    schedulers) or the SIGHUP of a closed terminal reaches the workers too; one killed by it turns the stop into a DataLoader error."""
    loader.worker_init_fn = functools.partial(_ignore_stop_signals, then=loader.worker_init_fn)
    return loader


def shutdown_workers(loader: DataLoader) -> None:
    """Stop a loader's persistent worker processes now. Left to the garbage collector, a worker of a run that
    ends on a signal can outlive it (blocked joining its queue), holding its memory."""
    iterator = getattr(loader, "_iterator", None)
    if iterator is not None and hasattr(iterator, "_shutdown_workers"):
        try:
            iterator._shutdown_workers()
        finally:
            # torch ends a worker that does not exit in time with SIGTERM, which these workers ignore.
            for worker in getattr(iterator, "_workers", []):
                if worker.is_alive():
                    worker.kill()
                    worker.join()
    loader._iterator = None
