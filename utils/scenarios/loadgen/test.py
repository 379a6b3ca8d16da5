"""The LoadGen scenarios (multi_stream, server, offline): a sibling of the pass runner that hands the pipeline
to MLPerf LoadGen as its system under test.

LoadGen decides when queries arrive and which images they hold; the query sample library is the dataset's
images (or video frames), decoded into memory before the clock starts, so its timed batches' `load` is the
wait for samples in memory. One worker thread answers the queries in arrival order,
running the pipeline's stages on up to `dataset.batch_size` waiting images at a time and timing every step
from outside as a timed pass does, so the breakdown of where the time goes stays. The pipeline never knows it
is measured.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np

from datasets.image_folder import LoadedImage
from datasets.item_batches import ItemBatches
from pipelines.contract import DetectionPipeline, Detections
from utils.core import exit_hooks
from utils.core.errors import MissingDependency
from utils.measure.steps.timed_batch import BatchPlace, run_stages, timed_batch
from utils.core.native_thread import name_this_thread
from utils.scenarios.loadgen.results import detail_entries, encode_detections, scenario_result
from utils.record.sections import ScenarioSection
from utils.record.steps import ANNOTATE_STEP, FETCH_STEPS, PIPELINE_STEP, PassKind, StepRecord
from utils.measure.steps.step_timer import StepTimer
from utils.storage import layout
from utils.detections.writer import DetectionWriter

STOP_WAIT_S = 5.0
WORKER_NAME = "loadgen-sut-"  # + the stream's index: the thread's name in /proc and cpu_counters.csv
LOADGEN_THREAD_NAME = "loadgen"
LOADGEN_SCENARIOS = {"multi_stream": "MultiStream", "server": "Server", "offline": "Offline"}
# The figure summary.json names as each scenario's own; utils.commands.sweep.answer ranks sweep points by the same ones.
SCENARIO_FIGURE = {"single_stream": "p50 latency", "multi_stream": "p99 query latency", "offline": "samples/s",
                   "server": "samples/s at the latency bound"}


class LoadgenMissing(MissingDependency):
    """mlperf_loadgen cannot be imported: this environment lacks one of the project's dependencies."""


def import_loadgen() -> Any:
    try:
        import mlperf_loadgen
    except ImportError as error:
        raise LoadgenMissing(f"benchmark.scenario needs MLPerf LoadGen, which cannot be imported ({error}); "
                             "install it with: pip install mlcommons-loadgen") from None
    return mlperf_loadgen


@dataclass(frozen=True)
class ScenarioSettings:
    """What LoadGen is asked for, from the config's benchmark.loadgen section."""

    scenario: str
    mode: str
    min_duration_s: float
    max_duration_s: Optional[float]
    min_query_count: int
    target_qps: Optional[float]
    target_latency_ms: Optional[float]
    target_latency_percentile: float
    samples_per_query: int
    find_peak: bool
    seed: int


def scenario_settings(benchmark: Any) -> Optional[ScenarioSettings]:
    """The config's benchmark section as LoadGen settings; None for single_stream (detbench's own passes).
    LoadGen must be importable: checked here, at start-up."""
    if benchmark.scenario not in LOADGEN_SCENARIOS:
        return None
    import_loadgen()
    loadgen = benchmark.loadgen
    return ScenarioSettings(benchmark.scenario, loadgen.mode, loadgen.min_duration_s, loadgen.max_duration_s,
                            loadgen.min_query_count, loadgen.target_qps, loadgen.target_latency_ms,
                            loadgen.target_latency_percentile, loadgen.samples_per_query, loadgen.find_peak,
                            loadgen.seed)


# LoadGen plans offline's one query and the streams' query counts from the expected rate; one a little above
# the measured rate keeps a run at or above its minimum duration when the timed run goes faster than the probe.
EXPECTED_RATE_MARGIN = 1.5


def warm_ms_per_image(records: Sequence[StepRecord]) -> list[float]:
    """Per batch, the pipeline's milliseconds per image without its fetch, the files' or the frames' decoding
    (LoadGen's samples wait decoded in memory)."""
    fetch_steps = set(FETCH_STEPS.values())
    pipelines: dict[tuple[int, int], StepRecord] = {}
    fetches: dict[tuple[int, int], StepRecord] = {}
    for r in records:
        if r.images and r.step == PIPELINE_STEP:
            pipelines[(r.pass_index, r.batch)] = r
        elif r.images and r.step in fetch_steps:
            fetches[(r.pass_index, r.batch)] = r
    return [(batch.ms - fetches[key].ms) / batch.images for key, batch in pipelines.items() if key in fetches]


def expected_rate(warm_per_image_ms: Sequence[float], images: int) -> float:
    """Images per second to tell LoadGen to expect when the config gives none: from warm batches (a shape's
    first run carries its cold start), with a margin (EXPECTED_RATE_MARGIN)."""
    fastest = min(warm_per_image_ms) if warm_per_image_ms else None
    return EXPECTED_RATE_MARGIN * 1000.0 / fastest if fastest else float(images)


def loadgen_settings(lg: Any, settings: ScenarioSettings, expected_per_s: float) -> Any:
    test = lg.TestSettings()
    test.scenario = getattr(lg.TestScenario, LOADGEN_SCENARIOS[settings.scenario])
    if settings.mode == "accuracy":
        test.mode = lg.TestMode.AccuracyOnly
    elif settings.find_peak:
        test.mode = lg.TestMode.FindPeakPerformance
    else:
        test.mode = lg.TestMode.PerformanceOnly
    test.min_duration_ms = int(settings.min_duration_s * 1000)
    test.max_duration_ms = int(settings.max_duration_s * 1000) if settings.max_duration_s else 0
    test.min_query_count = settings.min_query_count
    test.qsl_rng_seed = test.sample_index_rng_seed = test.schedule_rng_seed = settings.seed
    expected_latency_ns = int(1e9 / expected_per_s)
    test.single_stream_expected_latency_ns = expected_latency_ns
    test.multi_stream_samples_per_query = settings.samples_per_query
    test.multi_stream_expected_latency_ns = expected_latency_ns * settings.samples_per_query
    test.offline_expected_qps = settings.target_qps or expected_per_s
    if settings.scenario == "server":
        test.server_target_qps = settings.target_qps
        test.server_target_latency_ns = int(settings.target_latency_ms * 1e6)
        test.server_target_latency_percentile = settings.target_latency_percentile
    return test


@dataclass
class ScenarioImages:
    """The images (or video frames) a LoadGen test draws from, in the batches it answers in: how many it keeps
    decoded (its performance sample count; None: all), and what each stream warms up on first."""

    dataset: ItemBatches
    performance_sample_count: Optional[int] = None
    warm_batches: Sequence[list[LoadedImage]] = ()
    warmed_shapes: set = field(default_factory=set)  # the input shapes already warm before the test


@dataclass(frozen=True)
class AnswerSinks:
    """Where a LoadGen test's answers go: the step timer (the first stream's; the others time into their own),
    the detection writer (accuracy mode; None otherwise), and `advance`, told how many images each batch held,
    warm-up and timed alike (the progress bar)."""

    timer: StepTimer
    writer: Optional[DetectionWriter] = None
    advance: Callable[[int], None] = lambda images: None


class _Answers:
    """The worker that answers LoadGen's queries: a queue of waiting samples, drained in batches of
    `batch_size`; `shape_of` a batch's input shape, `warmed_shapes` those already warm."""

    def __init__(self, lg: Any, pipeline: DetectionPipeline, sinks: AnswerSinks, images: dict[int, LoadedImage],
                 batch_size: int, shape_of: Callable[[list[LoadedImage]], Optional[tuple]], warmed_shapes: set):
        self.lg, self.pipeline, self.timer = lg, pipeline, sinks.timer
        self.images, self.batch_size, self.shape_of = images, batch_size, shape_of
        self.warmed_shapes, self.writer = warmed_shapes, sinks.writer
        self.on_batch = self.on_warm = sinks.advance
        self.stages = pipeline.stages()
        self.lock = threading.Lock()  # counts, shapes seen and the detection writer, shared by the workers
        self.thread_timer = threading.local()
        self.waiting: "queue.Queue[Any]" = queue.Queue()
        self.stopping = threading.Event()
        self.failure: Optional[BaseException] = None
        self.batches = 0
        self.samples = 0
        self.warmed: list[dict] = []  # one entry per stream once its worker has warmed it
        self.cold: list[dict] = []  # batches whose input shape ran for the first time, as warmup.cold_shapes

    def issue(self, samples: list) -> None:
        for sample in samples:
            self.waiting.put(sample)

    def flush(self) -> None:
        pass

    def warm(self, batches: Sequence[list[LoadedImage]], stream: int) -> None:
        """This worker's stream (its session, request or thread pool) runs the warm-up batches untimed, before
        LoadGen starts: a stream's first request is slow, and a timed query must not pay for it."""
        started = time.perf_counter()
        try:
            for batch in batches:
                images = [image.image for image in batch if image.image is not None]
                if images:
                    run_stages(self.stages, StepTimer(), images)
                with self.lock:
                    self.on_warm(len(batch))
        except BaseException as error:
            self.failure = error
        with self.lock:
            self.warmed.append({"stream": stream, "thread_id": threading.get_native_id(),
                                "batches": len(batches), "ms": (time.perf_counter() - started) * 1e3,
                                "cpus": _thread_cpus()})

    def run(self, timer: Optional[StepTimer] = None, warm: Sequence[list[LoadedImage]] = (),
            stream: int = 0) -> None:
        """One worker: `timer`, its own StepTimer when several workers answer at once (a timer keeps one
        stack of open steps). It warms its stream first."""
        self.thread_timer.timer = timer or self.timer
        name_this_thread(f"{WORKER_NAME}{stream}")
        self.warm(warm, stream)
        while True:
            first = self.waiting.get()
            if first is None:
                self.waiting.task_done()
                self.waiting.put(None)  # the end, for the next worker too
                return
            batch = [first]
            while len(batch) < self.batch_size:
                try:
                    sample = self.waiting.get_nowait()
                except queue.Empty:
                    break
                if sample is None:
                    self.waiting.task_done()
                    self.waiting.put(None)
                    break
                batch.append(sample)
            try:
                self._answer(batch)
            finally:
                for _ in batch:  # waiting.join() returns once every issued sample is answered and written
                    self.waiting.task_done()

    def _answer(self, batch: list) -> None:
        if self.stopping.is_set() or self.failure is not None:
            self._complete(batch, [None] * len(batch))  # a stop: LoadGen ends fast, nothing is measured
            return
        try:
            loaded, detections = self._measure(batch)
        except BaseException as error:  # kept for the main thread; LoadGen still gets its answers
            self.failure = error
            self._complete(batch, [None] * len(batch))
            return
        found = iter(detections or [])
        self._complete(batch, [next(found) if image.image is not None else None for image in loaded])
        try:
            self._write(batch, loaded, detections)
        except BaseException as error:
            self.failure = error

    def _measure(self, batch: list) -> tuple[list[LoadedImage], Optional[list[Detections]]]:
        """The pipeline on one batch, every step timed: the batch's images and their detections."""
        timer = self.thread_timer.timer
        loaded = [self.images[sample.index] for sample in batch]
        valid = [image for image in loaded if image.image is not None]
        shape = self.shape_of(valid) if valid else None
        with self.lock:
            cold = shape is not None and shape not in self.warmed_shapes
            if shape is not None:
                self.warmed_shapes.add(shape)  # another worker's batch of this shape is no longer its first
            index = self.batches
            if cold:
                self.cold.append({"batch": index, "shape": list(shape)})
            self.batches += 1
        result = timed_batch(lambda: loaded, lambda images: run_stages(self.stages, timer, images), timer,
                             BatchPlace(PassKind.TIMED, 0, index, cold))
        return loaded, result.output

    def _write(self, batch: list, loaded: list[LoadedImage], detections: Optional[list[Detections]]) -> None:
        """Accuracy mode's detections (the writer is shared, so one worker at a time), and the counts."""
        timer = self.thread_timer.timer
        valid = [image for image in loaded if image.image is not None]
        with self.lock:
            if self.writer is not None:
                for image in loaded:
                    if image.image is None:
                        self.writer.write_skipped(image)
                if valid:
                    with timer.step(ANNOTATE_STEP):
                        self.writer.write_batch(valid, detections)
                self.writer.flush()
            self.samples += len(batch)
            self.on_batch(len(batch))

    def _complete(self, batch: list, answers: list[Optional[Detections]]) -> None:
        lg = self.lg
        responses, kept = [], []
        for sample, found in zip(batch, answers):
            if found is None:
                responses.append(lg.QuerySampleResponse(sample.id, 0, 0))
                continue
            rows = np.concatenate([found.boxes.float().numpy(), found.scores.float().numpy()[:, None],
                                   found.labels.float().numpy()[:, None]], axis=1) if len(found) else np.zeros((0, 6))
            payload = np.frombuffer(encode_detections(rows), dtype=np.uint8)
            kept.append(payload)  # alive until LoadGen has copied it
            pointer, size = payload.__array_interface__["data"][0], payload.nbytes
            responses.append(lg.QuerySampleResponse(sample.id, pointer, size))
        lg.QuerySamplesComplete(responses)


class ScenarioRun:
    """One LoadGen test over the pipeline; `run` blocks until LoadGen has its answer (or a stop ends it)."""

    def __init__(self, settings: ScenarioSettings, pipeline: DetectionPipeline, images: ScenarioImages,
                 sinks: AnswerSinks, log_dir: Path, streams: int = 1):
        """`log_dir`: where LoadGen writes its logs."""
        self.settings = settings
        self.pipeline = pipeline
        self.dataset = images.dataset
        samples = len(self.dataset.items)
        self.performance_count = min(images.performance_sample_count or samples, samples)
        self.log_dir = log_dir
        self.lg = import_loadgen()
        self.answers = _Answers(self.lg, pipeline, sinks, {}, self.dataset.batch_size, self._shape_of,
                                images.warmed_shapes)
        self.thread: Optional[threading.Thread] = None
        self.workers: list[threading.Thread] = []
        self.finished = threading.Event()
        self.released = threading.Event()
        # Workers past the first time into timers of their own; their records join the run's at the end.
        self.worker_timers = [StepTimer() for _ in range(streams - 1)]
        self.warm_batches = list(images.warm_batches)

    def _shape_of(self, images: list[LoadedImage]) -> tuple:
        return tuple(self.pipeline.input_shape([image.image.shape[:2] for image in images]))

    def _load(self, indices: list[int]) -> None:
        # One call for all of them: a video is read once up to the last frame asked for.
        for index, image in zip(indices, self.dataset.decode(indices)):
            self.answers.images[index] = image

    def _unload(self, indices: list[int]) -> None:
        for index in indices:
            self.answers.images.pop(index, None)

    def start_workers(self) -> None:
        """One worker per stream, each warm before this returns (short waits, so a stop signal still gets through).
        Called before the timed pass's recorders listen: a stream's warm-up is not the test's time, energy or
        memory, and the CPU counters, which attach to the threads alive when the test starts, see the workers."""
        self.workers = [threading.Thread(target=self.answers.run, args=(timer, self.warm_batches, index),
                                         name=f"{WORKER_NAME}{index}", daemon=True)
                        for index, timer in enumerate([None, *self.worker_timers])]
        for worker in self.workers:
            worker.start()
        while len(self.answers.warmed) < len(self.workers) and any(worker.is_alive() for worker in self.workers):
            time.sleep(0.01)
        if self.answers.failure is not None:
            self.answers.waiting.put(None)
            raise self.answers.failure

    def start(self, expected_per_s: float) -> None:
        """LoadGen runs in its own thread so that the main thread stays free to take Ctrl-C and SIGTERM. The
        workers must have been started (start_workers)."""
        lg = self.lg
        self.log_dir.mkdir(parents=True, exist_ok=True)
        test = loadgen_settings(lg, self.settings, expected_per_s)
        log = lg.LogSettings()
        log.log_output.outdir = str(self.log_dir)
        log.log_output.copy_summary_to_stdout = False
        log.enable_trace = False

        def test_thread() -> None:
            name_this_thread(LOADGEN_THREAD_NAME)
            sut = lg.ConstructSUT(self.answers.issue, self.answers.flush)
            qsl = lg.ConstructQSL(len(self.dataset.items), self.performance_count, self._load, self._unload)
            try:
                lg.StartTestWithLogSettings(sut, qsl, test, log)
                self.answers.waiting.join()  # the last batches written and counted, not only answered
            finally:
                lg.DestroyQSL(qsl)
                lg.DestroySUT(sut)
                self.finished.set()
                # Alive, with the workers, until release(): a thread that ends inside the timed pass's bracket
                # loses its CPU counts.
                self.released.wait()

        self.thread = threading.Thread(target=test_thread, name=LOADGEN_THREAD_NAME, daemon=True)
        self.thread.start()

    def release(self) -> None:
        """Ends the workers and LoadGen's thread, once the timed pass's recorders have stopped listening. A test
        that a stop left running (stop()) keeps its thread; the workers end after their current batch."""
        self.answers.waiting.put(None)  # each worker puts it back for the next one
        self.released.set()
        if self.finished.is_set():
            for worker in self.workers:
                worker.join()
            if self.thread is not None:
                self.thread.join()

    def wait(self) -> None:
        """Short waits, so a stop signal reaches the main thread between them."""
        while not self.finished.wait(0.1):
            pass
        if self.answers.failure is not None:
            raise self.answers.failure

    def stop(self) -> None:
        """A stop: the remaining queries are answered empty, so a stream or offline test ends soon. A server
        test keeps to its schedule (LoadGen offers no way to end a test early): after STOP_WAIT_S it is left
        running, its logs incomplete, and the process leaves past it (utils.core.exit_hooks)."""
        self.answers.stopping.set()
        if self.thread is not None and not self.finished.wait(STOP_WAIT_S):
            exit_hooks.left_running(lambda: not self.finished.is_set())

    def worker_records(self) -> list[StepRecord]:
        """The steps timed by the workers past the first, in start order."""
        return sorted((r for timer in self.worker_timers for r in timer.records), key=lambda r: r.start_ns)

    def result(self) -> dict[str, Any]:
        detail = self.log_dir / Path(layout.LOADGEN_DETAIL).name
        entries = detail_entries(detail.read_text(errors="replace").splitlines()) if detail.exists() else {}
        result = scenario_result(entries)
        if self.answers.stopping.is_set():
            cut = "" if self.finished.is_set() else (f"; LoadGen was still running its schedule {STOP_WAIT_S:g} s "
                                                     "later, so its logs are incomplete")
            result.update(valid=False, reason=f"stopped by a signal: the remaining queries were answered empty{cut}")
        return result

    def document(self) -> ScenarioSection:
        """summary.json `scenario`: what was asked, LoadGen's verdict, and what the worker answered."""
        settings = self.settings
        return {
            "name": settings.scenario,
            "figure": SCENARIO_FIGURE[settings.scenario],
            "driver": f"MLPerf LoadGen {loadgen_version()}",
            "mode": settings.mode + (" (find peak)" if settings.find_peak else ""),
            "settings": {"min_duration_s": settings.min_duration_s, "max_duration_s": settings.max_duration_s,
                         "min_query_count": settings.min_query_count, "target_qps": settings.target_qps,
                         "target_latency_ms": settings.target_latency_ms,
                         "target_latency_percentile": settings.target_latency_percentile,
                         "samples_per_query": settings.samples_per_query, "seed": settings.seed,
                         "performance_sample_count": self.performance_count},
            "result": self.result(),
            "streams": 1 + len(self.worker_timers),
            "streams_warmed": sorted(self.answers.warmed, key=lambda entry: entry["stream"]),
            "batches_answered": self.answers.batches,
            "samples_answered": self.answers.samples,
            "logs": {"summary": layout.LOADGEN_SUMMARY, "detail": layout.LOADGEN_DETAIL,
                     "accuracy": layout.LOADGEN_ACCURACY, "trace": layout.LOADGEN_TRACE},
        }


def _thread_cpus() -> Optional[str]:
    """The calling thread's allowed cores as /proc lists them (Cpus_allowed_list)."""
    try:
        status = Path(f"/proc/self/task/{threading.get_native_id()}/status").read_text()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in status.splitlines()
                 if line.startswith("Cpus_allowed_list")), None)


def loadgen_version() -> str:
    from importlib import metadata
    try:
        return metadata.version("mlcommons-loadgen")
    except metadata.PackageNotFoundError:
        return "unknown"
