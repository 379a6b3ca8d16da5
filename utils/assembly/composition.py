"""The composition root: the one reader of the config. It builds the dataset (image files, or the frames of
video files), the pipeline with its runtime,
the recorders and the writers, runs the pass plan and hands the run record to the writers.

config -> dataset -> pipeline (+ runtime) -> recorders -> run record -> writers -> outputs/<run_id>/
"""
from __future__ import annotations

import functools
import operator
import os
import signal
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from torch.utils.data import DataLoader
from datasets.image_folder import DatasetBatches, image_loader
from datasets.kinds import IMAGES, VIDEOS
from datasets.labels import load_ground_truth
from datasets.sources.dataset import DatasetSource, find_dataset
from datasets.sources.frame_batches import FrameBatches, item_batches
from pipelines.contract import DetectionPipeline
from pipelines.registry import family_for
from pipelines.runtimes.registry import is_reference
from utils.config.schema import Config, config_to_yaml
from utils.core.errors import ExitStatus
from utils.measure.below_layer.control import BelowTheLayer
from utils.preflight.cpu_budget import loader_workers, threads_warning, usable_cpus
from utils.assembly.dataset_setup import decode_settings, unused_dataset_keys
from utils.assembly.dependency_logs import DependencyLogs
from utils.scenarios.input_shapes import batch_shapes, choose_warmup, image_sizes, warmup_document, warmup_line
from utils.core.interruption import RunStops, signal_of
from utils.tracking.mlflow_step import log_to_mlflow
from utils.preflight.memory_fit import available_memory, check_fits, measure_fit
from utils.scenarios.pass_plan import PassPlan, PassSchedule, PlannedPass, WarmupBatches
from utils.measure.listening import PassRecorders
from utils.measure.registry import measurements
from utils.scenarios.context import PassContext, PassProgress
from utils.scenarios.contract import FoundImages, RunImages, ScenarioRun
from utils.scenarios.registry import readers_of, scenario_for
from utils.checks.run_checks import run_checks
from utils.preflight.heap_setting import KEEP_HEAP, apply_allocator
from utils.assembly.runtime_setup import prepare_runtime
from utils.checks.int8.repair_statement import control_entry, warnings as int8_warnings
from utils.scenarios.runner import PassRunner, leave_stops_to_the_main_process, shutdown_workers
from utils.preflight.start_refusals import StartRefused, check_class_ids
from utils.measure.steps.timed_batch import batch_sizes, untimed
from utils.record.built_run import BuiltRun, RunSections
from utils.record.run_record import RunIdentity, RunRecord, Status
from utils.record.source_section import reading_warnings, source_line, source_section, start_warnings
from utils.record.steps import FETCH_STEPS, PassKind, step_order
from utils.measure.environment import describe_environment
from utils.storage import layout
from utils.storage.atomic import OutputWriteError
from utils.reporting.console import format_summary, layer_overview
from utils.detections.writer import DetectionWriter
from utils.storage.run_directory import RunDirectory
from utils.measure.steps.journal import RunJournal
from utils.reporting.run_writer import RunWriter
from utils.reporting.summary import summary_document

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    summary: dict
    exit_status: ExitStatus
    report: str


@dataclass(frozen=True)
class PassesEnded:
    """How the passes ended, for writing the record: the run's stops, the signal that ended them (None: none
    did), and whether a write failure cut the files they stream (those are discarded, never half-published)."""

    stops: RunStops
    stop_signal: Optional[int] = None
    failed_writing: bool = False


def run_sections(config: Config) -> RunSections:
    """The config's sections the parts below the composition root read: they never see the whole config."""
    return RunSections(config.dataset, config.model, config.runtime, config.preprocess, config.postprocess,
                       config.benchmark, config.run.seed, config.cameras)


class Benchmark:
    def __init__(self, config: Config, config_file: str, console: Callable[[str], None] = print):
        self.config = config
        self.config_file = config_file
        self.console = console
        self.all_skipped = False
        self.refused = False
        self.start_warnings: list[str] = []
        self._below: Optional[BelowTheLayer] = None

    def prepare(self) -> None:
        """Everything that can fail because of the user's input happens here, before any output is written.
        Dependencies' log lines go to the run's log file from here on (dependency_logs)."""
        config = self.config
        self.dependency_logs = DependencyLogs(
            self.console, Path(config.run.output_dir) / str(config.run.id) / layout.DEPENDENCY_LOG)
        self.dependency_logs.start()
        try:
            self._prepare()
        except BaseException:
            self.dependency_logs.stop()
            raise
        self.dependency_logs.open()

    def _prepare(self) -> None:
        config = self.config
        self.family = family_for(config.model.network)  # the config refused a runtime it cannot run
        self.scenario = scenario_for(config.benchmark.scenario)
        self.sections = run_sections(config)
        self._find_items()
        sizes, self.image_bytes = self.sizes, self.found.image_bytes
        # The scenario's own settings, refused before anything is loaded (LoadGen's schedule, the cameras).
        self.scenario_settings = self.scenario.prepare(self.sections, self.found)
        # Before the model: its weights and everything the passes allocate then come from the kept heap.
        self.allocator = apply_allocator(config.runtime.allocator)
        if config.runtime.allocator == KEEP_HEAP:
            self.console("runtime.allocator keep_heap: glibc's malloc keeps the memory it frees (mallopt: "
                         "M_MMAP_MAX 0, M_TRIM_THRESHOLD 2 GiB - 1)")
        self.network = self.family.load_network(config.model.network, config.model.weights, config.run.seed,
                                                config.model)
        check_class_ids(config.postprocess.classes, self.network.class_names, config.model.network)
        if config.model.file is not None and {"arch", "weights"} & config.model.model_fields_set:
            unused = (f"model.arch and model.weights do not apply with model.file: the file {config.model.file} is "
                      "the network, with its own weights")
            self.start_warnings.append(unused)
            self.console(f"WARNING: {unused}")
        self._check_memory()  # before the runtime: an export traces an input of the configured size
        oversubscribed = threads_warning(config.runtime.threads, *usable_cpus())
        if oversubscribed is not None:
            self.start_warnings.append(oversubscribed)
            self.console(f"WARNING: {oversubscribed}")
        self.truth = (load_ground_truth(config.dataset.labels, self.found.root, self.items,
                                        self.network.class_names, config.dataset.max_pixels)
                      if config.dataset.labels and self.scenario.reads_images else None)
        if self.truth is not None and (few := self.truth.coverage_warning()) is not None:
            self.start_warnings.append(few)
            self.console(f"WARNING: {few}")
        sections = self.sections
        prepared = prepare_runtime(sections, self.family, self.network, self.dataset, self.console, self.truth)
        self.runtime, self.calibration = prepared.runtime, prepared.calibration
        self.pipeline: DetectionPipeline = self.family.build_pipeline(
            self.network, prepared.forward, config.preprocess, config.postprocess)
        # What the checks and the LoadGen test read, in place of the config.
        self.built = BuiltRun(sections, self.family, self.network, self.runtime, prepared.forward, self.pipeline,
                              prepared.scored, self.truth)
        self.input_shapes = batch_shapes(sizes, config.dataset.batch_size, self.pipeline.input_shape)
        self.warmup = choose_warmup(self.input_shapes, config.benchmark.warmup, config.benchmark.warmup_max_batches)
        self.run_dir = RunDirectory(config.run.output_dir, config.run.id)
        self.run_dir.create()

    def _find_items(self) -> None:
        """What dataset.path holds, named before anything is decoded: image files, or video frames (each video
        probed: one FFmpeg cannot read, or whose frames dataset.max_pixels refuses, ends the run here). A scenario
        that reads its own sources (cameras) has none: the passes and checks over the items do without."""
        config = self.config
        self.source: Optional[DatasetSource] = None
        if self.scenario.reads_images:
            self.source = find_dataset(config.dataset.path, config.dataset.limit, decode_settings(config.dataset))
            self.dataset = item_batches(self.source, config.dataset.batch_size)
        else:
            self.dataset = DatasetBatches([], config.dataset.batch_size, config.dataset.max_pixels)
        self.items = list(self.dataset.items)
        if self.source is not None and self.source.kind == VIDEOS:
            self.sizes: list = list(self.source.sizes())
            self.console(source_line(self.source, config.dataset.path))
            for warning in start_warnings(self.source):
                self.start_warnings.append(warning)
                self.console(f"WARNING: {warning}")
        else:
            self.sizes = image_sizes(self.items, config.dataset.max_pixels)
        root = self.source.root if self.source is not None else Path(config.dataset.path)
        self.found = FoundImages(self.items, [3 * h * w for h, w in filter(None, self.sizes)], root)

    def _fetch_steps(self) -> tuple[str, ...]:
        """What the run's batches are fetched through: the dataset's own fetch, and the scenario's where its timed
        batches fetch otherwise (LoadGen's, from memory)."""
        own = FETCH_STEPS[self.dataset.kind]
        return tuple(dict.fromkeys((own, self.scenario.timed_fetch_step or own)))

    def _loader(self, record: RunRecord) -> Any:
        """What a whole pass reads: image files through the DataLoader (its workers left the stops), video frames
        through their batches, each pass decoding the videos again in the loop."""
        if self.dataset.kind == IMAGES:
            return leave_stops_to_the_main_process(image_loader(self.items, self.config.dataset.batch_size,
                                                                self._workers(record), self.config.dataset.max_pixels))
        return self.dataset

    def _check_memory(self) -> None:
        """Refuses (exit 2) a batch whose forward cannot fit, before anything of its size is allocated."""
        config, family = self.config, self.family
        if not config.benchmark.memory.check:
            return
        probe = family.memory_probe(self.network, config.postprocess)
        if probe is None:  # a network given as a file has no module to probe
            return
        fit = measure_fit(*probe, smallest_input=family.smallest_input(config.model.network))
        sizes = {f"preprocess.{key}": getattr(config.preprocess, key) for key in family.SIZE_KEYS}
        # A batch never holds more images than the dataset has (a scenario of its own sources: any batch).
        batch_size = (min(config.dataset.batch_size, len(self.items)) if self.scenario.reads_images
                      else config.dataset.batch_size)
        check_fits(fit, sizes, family.largest_input_area(config.model.network, config.preprocess), batch_size,
                   *available_memory())

    def identity(self) -> RunIdentity:
        config = self.config
        return RunIdentity(
            run_id=config.run.id, config_file=self.config_file, family=self.family.NAME, arch=config.model.network,
            weights=self.network.weights, random_weights=self.network.random_weights, seed=config.run.seed,
            img_size=self.family.input_size(config.preprocess), batch_size=config.dataset.batch_size,
            runtime=self.runtime.settings(), step_order=step_order(self.pipeline.step_order(), self._fetch_steps()))

    def execute(self) -> Outcome:
        """Runs the passes and writes the run record: Ctrl-C and SIGTERM end the passes, never the writing."""
        try:
            return self._execute_and_track()
        finally:
            self.runtime.close()  # a next run in this process (tune's shared runs) starts on every core again
            self.dependency_logs.stop()

    def _execute_and_track(self) -> Outcome:
        stops = RunStops(self.console)
        with stops.handled():
            outcome = self._execute(stops)
            if self.config.outputs.mlflow.tracking_uri:
                if outcome.summary.get("status") == Status.COMPLETE and stops.received is None:
                    self._track(stops, outcome)
                else:
                    why = "a stop arrived" if stops.received else f"the run is {outcome.summary.get('status')}"
                    self.console(f"MLflow: not logged, {why} (only complete runs are logged on their own; "
                                 "utils.tracking.mlflow_runs.log_run_directory logs any run directory)")
        return outcome

    def _track(self, stops: RunStops, outcome: Outcome) -> None:
        status = log_to_mlflow(self.run_dir.path, self.config.outputs.mlflow, stops, self.console)
        if status is not None:
            outcome.exit_status = status

    def _new_record(self) -> RunRecord:
        """The run record as the run starts: what it is, the images found, and what was said before the passes."""
        record = RunRecord(self.identity())
        record.images.found = len(self.items)
        record.calibration = self.calibration
        record.recipe = self.pipeline.recipe()
        record.warn(*self.start_warnings)
        record.warn(*int8_warnings(control_entry(record.identity.runtime)))
        if self.config.dataset.batch_size > 1 and self.pipeline.batching_note:
            record.notes.append(self.pipeline.batching_note)
        if self.network.description:  # what was read of a network given as a file, and what was assumed
            record.notes.append("the network as read: " + "; ".join(
                f"{key} {value}" for key, value in self.network.description.items()))
        return record

    def _pass_plan(self, record: RunRecord) -> PassPlan:
        """How many passes of which batches the run times, from benchmark.* and the warm-up chosen."""
        bench = self.config.benchmark
        sizes = batch_sizes(len(self.items), self.config.dataset.batch_size)
        record.warmup = warmup_document(self.warmup, self.input_shapes)
        given = {"benchmark.loadgen": "loadgen" in bench.model_fields_set,
                 "cameras": "cameras" in self.config.model_fields_set}
        for section in sorted(key for key, set_by_user in given.items() if set_by_user
                              and key not in self.scenario.reads_sections):
            record.notes.append(f"{section} is not used: benchmark.scenario {bench.scenario} does not read it; set "
                                f"benchmark.scenario to {' or '.join(readers_of(section))} to use it")
        record.notes.extend(self.scenario.notes(self.sections))
        record.notes.extend(unused_dataset_keys(self.config.dataset, self.dataset.kind, self.scenario.reads_images))
        if not self.scenario.reads_images:
            record.notes.append(f"benchmark.scenario {bench.scenario} reads no image files: the checks that score "
                                "them (agreement with the reference, the accuracy pass) did not run")
        return PassPlan(PassSchedule.of(bench), sizes,
                        WarmupBatches(indices=self.warmup.batches, cold=frozenset(self.warmup.cold)))

    def _timed_passes(self, plan: PassPlan, context: PassContext) -> None:
        """The configured scenario's passes (utils/scenarios/registry.py)."""
        images = RunImages(self.dataset, self.sizes, self.input_shapes, self.image_bytes, self.warmup)
        self.scenario.run(ScenarioRun(plan, context, self.built, images, self.run_dir.path, self.scenario_settings))

    def _closing_checks(self, record: RunRecord) -> None:
        """After the passes: a run that skipped every image failed; the pipeline's doubts are warned."""
        if record.status == Status.COMPLETE and record.images.processed == 0 and record.images.skipped:
            # Nothing was measured: the dataset, not the harness, is at fault (exit status 2).
            self.all_skipped = True
            record.status, record.stop_reason = Status.FAILED, (
                f"every image was skipped ({record.images.skipped} of {record.images.found}): {layout.SKIPPED} in "
                f"{self.run_dir.path} says why for each one")
        record.warn(*self.pipeline.doubts())

    def _execute(self, stops: RunStops) -> Outcome:
        config = self.config
        record = self._new_record()
        writer = RunWriter(self.run_dir, config.outputs.plots, config.outputs.tensorboard, config.outputs.report)
        if record.identity.random_weights:
            self.console(f"WARNING: no model.weights given: {config.model.network} runs on {record.identity.weights} "
                         "weights; its boxes are not real detections.")
        try:
            environment = dict(describe_environment(PROJECT_ROOT), runtime=record.identity.runtime)
            writer.write_start(record, config_to_yaml(config), environment)
        except OutputWriteError as error:
            return self._failed_before_start(record, writer, error)
        stop_signal: Optional[int] = None
        failed_writing = False  # a stream cut by a write failure is discarded, never published half-written
        # Where batches of several threads overlap (LoadGen's streams, cameras) the counters bracket the whole pass.
        self._below = BelowTheLayer(config.profiling, self.pipeline.layer_timing_targets().model, self.console,
                                    counters_around=self.scenario.counters_around,
                                    allocator=self.allocator)
        recorders = PassRecorders.built(self._measurement_settings(), self._below)
        record.steps, record.steps_origin_ns = recorders.timer.records, recorders.timer.origin_ns
        plan = self._pass_plan(record)
        if self.scenario.reads_images:  # a scenario of its own sources warms up its own way
            self.console(warmup_line(self.warmup))
        progress = PassProgress(plan.total_images, config.run.id)
        loader = self._loader(record)
        def on_batch(images: int) -> None:
            stops.deliver()  # a stop whose first raise Python dropped ends the passes here
            progress.advance(images)

        runner = PassRunner(self.pipeline, loader, self.dataset, recorders, record.images, on_batch,
                            FETCH_STEPS[self.dataset.kind])
        started = time.perf_counter()
        detections: Optional[DetectionWriter] = None
        journal: Optional[RunJournal] = None
        try:
            # The cleanup of the passes (loader workers, memory sampler) is outside ending_passes(): once the
            # passes end, no stop cuts it short.
            with ExitStack() as stack:
                if isinstance(loader, DataLoader):
                    stack.callback(shutdown_workers, loader)
                stack.callback(self._below.stop)
                with stops.ending_passes():
                    detections = DetectionWriter(self.run_dir.path, self.scenario.items_root(self.found),
                                                 self.pipeline.class_names, config.outputs.save_images,
                                                 record.identity.random_weights_note)
                    journal = self._journal(recorders, detections)
                    recorders.timer.after_batch = journal.batch_ended
                    stack.enter_context(recorders.running())  # the memory baseline, the idle power
                    after_pass = functools.partial(self._after_pass, journal, writer, record)
                    self._timed_passes(plan, PassContext(runner, record, detections, progress, self.console,
                                                         after_pass))
            record.status = Status.COMPLETE
            record.wall_s = time.perf_counter() - started
            if config.profiling.kernels and self.scenario.kernels_batch:
                with stops.ending_passes():
                    self._below.kernels_batch(self._one_batch, self.pipeline.layer_timing_targets().model,
                                              self.runtime)
            progress.close()
            if self.scenario.reads_images:
                run_checks(self.built, self._needs_reference(), recorders, record, stops, self.console)
        except KeyboardInterrupt as stop:
            stop_signal = signal_of(stop)
            record.status, record.stop_reason = Status.INTERRUPTED, signal.Signals(stop_signal).name
            self.console(f"Interrupted ({record.stop_reason}): writing what was measured so far.")
        except OutputWriteError as error:
            record.status, record.stop_reason = Status.FAILED, str(error)
            failed_writing = True
        except StartRefused as refusal:  # known once the passes began (LoadGen's plan at the rate measured)
            self.refused = True  # the settings, not the harness, are at fault: exit status 2
            record.status, record.stop_reason = Status.FAILED, str(refusal)
        except Exception as error:
            # A bug, not a user's mistake: the record says failed and keeps what was measured, then the
            # traceback follows.
            record.status, record.stop_reason = Status.FAILED, f"{type(error).__name__}: {error}"
            self._finish(record, writer, detections, journal, recorders,
                         PassesEnded(stops, stop_signal, failed_writing))
            raise
        finally:
            progress.close()
        if record.wall_s is None:
            record.wall_s = time.perf_counter() - started
        self._closing_checks(record)
        return self._finish(record, writer, detections, journal, recorders,
                            PassesEnded(stops, stop_signal, failed_writing))

    def _one_batch(self) -> None:
        """The first batch through the pipeline's stages, untimed: not one of the run's steps."""
        images = [sample.image for sample in self.dataset.load(0) if sample.image is not None]
        if images:
            untimed(self.pipeline.stages())(images)

    def _workers(self, record: RunRecord) -> int:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        workers, warning = loader_workers(self.config.dataset.workers,
                                          int(record.identity.runtime.get("threads") or 1), cores)
        if warning is not None:
            record.warn(warning)
        return workers

    def _needs_reference(self) -> bool:
        runtime = self.config.runtime
        backend = self.family.reference_backend(self.config.model.network)
        return self.config.benchmark.agreement.enabled and not is_reference(runtime.model_dump(), backend)

    def _measurement_settings(self) -> dict[str, Any]:
        """Each measurement's own section of the config, by its key (utils/measure/registry.py)."""
        return {measurement.key: operator.attrgetter(measurement.config_key)(self.config)
                for measurement in measurements() if measurement.config_key is not None}

    def _journal(self, recorders: PassRecorders, detections: DetectionWriter) -> RunJournal:
        """The files that grow as the passes measure (utils/measure/steps/journal.py), so that a killed run keeps its batches."""
        run_dir = self.run_dir
        tables = [(run_dir.file(table.file), table.columns, table.rows_since) for table in recorders.growing_tables()]
        try:
            return RunJournal(run_dir.file(layout.STEPS_TIMER), recorders.timer.records, recorders.timer.origin_ns,
                              tables)
        except BaseException:
            detections.discard()
            raise

    @staticmethod
    def _after_pass(journal: RunJournal, writer: RunWriter, record: RunRecord, planned: PlannedPass) -> None:
        """A pass's measurements on disk as it ends: rows appended, the layer tables (re)written whole."""
        journal.pass_ended()
        if planned.kind is PassKind.LAYERS:
            writer.write_layer_tables(record)

    def _finish(self, record: RunRecord, writer: RunWriter, detections: Optional[DetectionWriter],
                journal: Optional[RunJournal], recorders: PassRecorders, ended: PassesEnded) -> Outcome:
        """Writes the record; a stop that arrives meanwhile is only noted (see RunStops)."""
        if isinstance(self.dataset, FrameBatches) and self.source is not None:
            record.source = source_section(self.source, self.dataset.whole_readings, self.config.dataset.path)
            record.warn(*reading_warnings(record.source))
        recorders.collect(record)
        if self._below is not None:
            self._below.runtime_kernels(record)
            self._below.collect(record)
        try:
            if detections is not None:
                if ended.failed_writing:
                    detections.discard()
                else:
                    detections.close()
            if journal is not None:
                journal.close()  # every row in it, before the writers replace its files whole
            record.finish(record.status, record.stop_reason)
            summary = writer.write_record(record)
        except OutputWriteError as error:
            # A failed run keeps its first failure as the cause: later ones on the same disk only follow it.
            record.finish(Status.FAILED, record.stop_reason if record.status == Status.FAILED else str(error))
            summary = self._write_failed_summary(writer, record)
        except BaseException as error:
            record.finish(Status.FAILED, f"{type(error).__name__}: {error}")
            self._write_failed_summary(writer, record)
            raise
        if record.status == Status.COMPLETE and record.layer_timing is not None:
            self.console(layer_overview(record.layer_timing,
                                        record.profile.layers if record.profile is not None else None))
        report = format_summary(summary, self.run_dir.path)
        if record.status == Status.FAILED:
            return Outcome(summary, ExitStatus.USAGE if self.all_skipped or self.refused else ExitStatus.FAILED,
                           report)
        stop = ended.stop_signal or ended.stops.received
        return Outcome(summary, ExitStatus.stopped_by(stop) if stop else ExitStatus.OK, report)

    def _write_failed_summary(self, writer: RunWriter, record: RunRecord) -> dict:
        try:
            return writer.write_summary(record)
        except OutputWriteError:
            return summary_document(record)

    def _failed_before_start(self, record: RunRecord, writer: RunWriter, error: OutputWriteError) -> Outcome:
        record.finish(Status.FAILED, str(error))
        summary = self._write_failed_summary(writer, record)
        return Outcome(summary, ExitStatus.FAILED, format_summary(summary, self.run_dir.path))
