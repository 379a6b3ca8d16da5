"""The one loop over batches that every pass runs: fetch a batch, keep the images that decoded, run the
pipeline's work on them. With a StepTimer each batch is timed from outside (pipeline > its fetch, then the
pipeline's stages); without one the same loop runs untimed (the reference, the agreement check, int8
calibration). The fetch is timed as `load` for image files and `decode_frames` for video frames
(utils.record.steps.FETCH_STEPS). The passes differ only in what they hand it and what they do with each batch's
output.
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from datasets.image_folder import LoadedImage
from pipelines.contract import Stage
from utils.measure.steps.step_frames import in_step_frame
from utils.record.steps import LOAD_STEP, PIPELINE_STEP, PassKind
from utils.measure.steps.step_timer import StepTimer


@dataclass(frozen=True)
class BatchPlace:
    """Where a timed batch belongs in steps_timer.csv."""

    kind: PassKind
    pass_index: int
    batch: int
    cold_shape: bool = False
    fetch_step: str = LOAD_STEP  # what fetching it is timed as


@dataclass(frozen=True)
class PassPlace:
    """Where a pass's timed batches belong: its kind and index, the batches whose input shape runs for the first
    time, and what fetching a batch is timed as."""

    kind: PassKind = PassKind.TIMED
    index: int = 0
    cold_batches: frozenset[int] = frozenset()
    fetch_step: str = LOAD_STEP


@dataclass
class BatchResult:
    samples: list[LoadedImage]  # as fetched, undecodable files included
    valid: list[LoadedImage]  # the ones that decoded
    output: Any  # what `run` returned for the valid images; None when none decoded


def run_stages(stages: Sequence[Stage], timer: StepTimer, value: Any) -> Any:
    """Leaf stages in order, each timed; a stage's parent group (postprocess) stays open across its children."""
    with ExitStack() as groups:
        open_group = None
        for stage in stages:
            if stage.parent != open_group:
                groups.close()
                if stage.parent is not None:
                    groups.enter_context(timer.step(stage.parent))
                open_group = stage.parent
            with timer.step(stage.name):
                value = in_step_frame(stage.name, stage.run, value)
    return value


def untimed(stages: Sequence[Stage]) -> Callable[[Any], Any]:
    def run(value: Any) -> Any:
        for stage in stages:
            value = stage.run(value)
        return value
    return run


def timed_batch(fetch: Callable[[], list[LoadedImage]], run: Callable[[list], Any],
                timer: Optional[StepTimer] = None, place: Optional[BatchPlace] = None) -> BatchResult:
    """One batch. The wait for `fetch` is its fetch step (load, decode_frames); `run` gets the decoded images'
    arrays."""
    if timer is None:
        samples = fetch()
        valid = [sample for sample in samples if sample.image is not None]
        return BatchResult(samples, valid, run([sample.image for sample in valid]) if valid else None)
    timer.set_batch(place.kind, place.pass_index, place.batch, place.cold_shape)
    output = None
    with timer.step(PIPELINE_STEP):
        with timer.step(place.fetch_step):
            samples = in_step_frame(place.fetch_step, fetch)
            valid = [sample for sample in samples if sample.image is not None]
            timer.set_images(len(valid))
        if valid:
            output = run([sample.image for sample in valid])
    return BatchResult(samples, valid, output)


def batch_loop(batches: Iterator[list[LoadedImage]], indices: Iterable[int], run: Callable[[list], Any],
               timer: Optional[StepTimer] = None, place: PassPlace = PassPlace()) -> Iterator[BatchResult]:
    """timed_batch over `batches`, one per index. A result is handed on once its batch's steps are closed,
    so what the caller does with it (writing images, a progress bar) is never inside the timing."""
    for index in indices:
        yield timed_batch(lambda: next(batches), run, timer,
                          BatchPlace(place.kind, place.index, index, index in place.cold_batches, place.fetch_step))


def batch_count(images: int, batch_size: int) -> int:
    return -(-images // batch_size)


def batch_sizes(images: int, batch_size: int) -> list[int]:
    """The files in each of the loader's batches: full ones, then the rest."""
    return [min(batch_size, images - start) for start in range(0, images, batch_size)]
