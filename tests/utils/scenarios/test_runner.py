"""utils.scenarios.runner: PassRunner runs the pipeline over the data once per planned pass, every step timed from
outside, with the recorders the pass's kind lets listen; and the loader's workers are left to the main process
on a stop, and shut down at once after.

Tested with a fake pipeline, loader, recorders and detection writer: which batches a pass runs (all, the
first max_batches, or the ones it picks), that the writer's counts reach the run's counts even when a stop cuts
writing short, the annotate step, and the workers' signal handling and shutdown."""
import signal
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import pytest

from datasets.image_folder import LoadedImage
from pipelines.contract import Stage
from utils.core.interruption import STOP_SIGNALS
from utils.scenarios.pass_plan import PlannedPass
from utils.scenarios.runner import PassRunner, _ignore_stop_signals, leave_stops_to_the_main_process, shutdown_workers
from utils.record.run_record import ImageCounts
from utils.record.steps import ANNOTATE_STEP, PIPELINE_STEP, PassKind
from utils.measure.steps.step_timer import StepTimer


def image(name, decoded=True):
    return LoadedImage(name, np.zeros((2, 2, 3), np.uint8) if decoded else None)


LOADER = [[image("0a"), image("0b")], [image("1a"), image("1b", decoded=False)], [image("2a")]]


class Recorders:
    def __init__(self):
        self.timer, self.kinds = StepTimer(), []

    @contextmanager
    def listening(self, kind):
        self.kinds.append(kind)
        yield


class Writer:
    def __init__(self, fail=False):
        self.fail, self.images_written, self.skipped, self.detections_written = fail, 0, 0, 0
        self.flushed = []  # images_written at each flush

    def flush(self):
        self.flushed.append(self.images_written)

    def write_skipped(self, sample):
        self.skipped += 1

    def write_batch(self, valid, output):
        self.images_written += len(valid)
        self.detections_written += 3 * len(valid)
        if self.fail:
            raise KeyboardInterrupt


class Batches(list):
    """The dataset cut into LOADER's batches, any one loaded on demand."""

    def load(self, index):
        return self[index]

    def at(self, indices):
        return map(self.load, indices)


def runner():
    pipeline = SimpleNamespace(stages=lambda: [Stage("forward", len)], forward_parts=lambda: [])
    sizes = []
    counts = ImageCounts()
    run = PassRunner(pipeline, LOADER, Batches(LOADER), Recorders(), counts, on_batch=sizes.append)
    return run, sizes, counts


def pipeline_batches(run):
    return [(r.pass_kind, r.batch, r.images) for r in run.timer.records if r.step == PIPELINE_STEP]


def test_a_pass_runs_every_batch_of_the_loader_with_its_recorders():
    run, sizes, _ = runner()
    run.run(PlannedPass(PassKind.TIMED, 0, None))
    assert pipeline_batches(run) == [(PassKind.TIMED, 0, 2), (PassKind.TIMED, 1, 1), (PassKind.TIMED, 2, 1)]
    assert sizes == [2, 2, 1]  # the progress bar counts files, undecodable ones included
    assert run.recorders.kinds == [PassKind.TIMED]


def test_max_batches_runs_the_first_ones_only():
    run, sizes, _ = runner()
    run.run(PlannedPass(PassKind.LAYERS, 0, 2))
    assert [batch for _, batch, _ in pipeline_batches(run)] == [0, 1]


def test_a_pass_that_picks_its_batches_loads_them_itself():
    run, _, _ = runner()
    run.run(PlannedPass(PassKind.WARMUP, 0, 1, batch_indices=(2, 0)))
    assert pipeline_batches(run) == [(PassKind.WARMUP, 2, 1), (PassKind.WARMUP, 0, 2)]


def test_written_images_are_counted_and_annotation_is_timed_outside_the_pipeline():
    run, _, counts = runner()
    writer = Writer()
    run.run(PlannedPass(PassKind.TIMED, 0, None), writer)
    assert (counts.processed, counts.skipped, counts.detections) == (4, 1, 12)
    assert writer.flushed == [2, 3, 4]  # each batch's rows reach the disk as the batch ends
    annotate = [r for r in run.timer.records if r.step == ANNOTATE_STEP]
    assert len(annotate) == 3 and {r.parent for r in annotate} == {None}


def test_counts_match_the_rows_written_when_a_stop_cuts_writing_short():
    run, _, counts = runner()
    with pytest.raises(KeyboardInterrupt):
        run.run(PlannedPass(PassKind.TIMED, 0, None), Writer(fail=True))
    assert (counts.processed, counts.detections) == (2, 6)


@pytest.fixture
def restored_signals():
    saved = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    yield
    for number, handler in saved.items():
        signal.signal(number, handler)


def test_loader_workers_ignore_stops_then_run_the_loaders_own_init(restored_signals):
    started = []
    loader = leave_stops_to_the_main_process(SimpleNamespace(worker_init_fn=started.append))
    loader.worker_init_fn(3)
    assert started == [3]
    assert [signal.getsignal(number) for number in STOP_SIGNALS] == [signal.SIG_IGN] * len(STOP_SIGNALS)


def test_ignoring_stops_needs_no_init_of_the_loaders_own(restored_signals):
    _ignore_stop_signals(0)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


class Worker:
    def __init__(self, alive):
        self.alive, self.calls = alive, []

    def is_alive(self):
        return self.alive

    def kill(self):
        self.calls.append("kill")

    def join(self):
        self.calls.append("join")


def test_shutdown_kills_the_workers_that_outlive_it():
    stuck, gone = Worker(alive=True), Worker(alive=False)
    iterator = SimpleNamespace(_shutdown_workers=lambda: None, _workers=[stuck, gone])
    loader = SimpleNamespace(_iterator=iterator)
    shutdown_workers(loader)
    assert (stuck.calls, gone.calls) == (["kill", "join"], [])
    assert loader._iterator is None


def test_shutdown_of_a_loader_that_never_started_is_harmless():
    loader = SimpleNamespace()
    shutdown_workers(loader)
    assert loader._iterator is None
