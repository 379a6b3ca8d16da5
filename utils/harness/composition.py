"""The composition root: the one reader of the config. It builds the dataset, the pipeline with its runtime,
the recorders and the writers, runs the pass plan and hands the run record to the writers.

config -> dataset -> pipeline (+ runtime) -> recorders -> run record -> writers -> outputs/<run_id>/
"""
from __future__ import annotations

import json
import os
import signal
import time
import warnings
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from tqdm import tqdm

from datasets.image_folder import decode_image, find_images, image_loader
from datasets.labels import load_ground_truth
from pipelines.contract import FORWARD_STAGE, DetectionPipeline
from pipelines.registry import family_for
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.registry import build_runtime
from pipelines.runtimes.torch_eager import TorchEager
from utils.config import SINGLE_STREAM, Config, config_to_yaml
from utils.harness import accuracy_pass
from utils.harness.agreement_check import compare_with_reference
from utils.harness.cpu_budget import threads_warning, usable_cpus
from utils.harness.calibration_inputs import calibration_inputs
from utils.harness.scored_images import agreement_count, calibration_document, calibration_split, more_images
from utils.harness.input_shapes import (batch_shapes, choose_warmup, image_sizes, warmup_document,
                                        warmup_line)
from utils.harness.interruption import RunStops, exit_status, signal_of
from utils.harness.memory_fit import available_memory, check_fits, measure_fit
from utils.harness.pass_plan import PassPlan, PlannedPass
from utils.harness.scenario import ScenarioRun, expected_rate, scenario_settings, warm_ms_per_image
from utils.harness.runner import PassRunner, leave_stops_to_the_main_process, shutdown_workers
from utils.harness.start_refusals import check_class_ids
from utils.record.loadgen_results import accuracy_log_map
from utils.record.run_record import RunIdentity, RunRecord, Status, Table
from utils.record.verdict import apply_budget, verdict_warnings
from utils.record.steps import PIPELINE_STEP, RUN_STEP, PassKind, step_order
from utils.recorders.contention import ContentionRecorder, contention_verdict
from utils.recorders.energy import EnergyRecorder, RaplStatus
from utils.recorders.environment import describe_environment
from utils.recorders.layer_timing import ModelTiming
from utils.recorders.runtime_layers import RuntimeProfile, profiles_layers
from utils.recorders.runtime_trace import RuntimeTrace, viewer_profile
from utils.recorders.memory import MEMORY_COLUMNS, MEMORY_STEP_COLUMNS, MemorySampler
from utils.recorders.profiler import StepRanges, profile_pipeline
from utils.recorders.step_timer import StepTimer
from utils.tracking.mlflow_runs import TrackingError, log_run_directory
from utils.writers import layout
from utils.writers.atomic import OutputWriteError
from utils.writers.console import format_summary, layer_overview
from utils.writers.detections import DetectionWriter
from utils.writers.run_directory import RunDirectory
from utils.writers.run_writer import RunWriter
from utils.writers.summary import summary_document

PROJECT_ROOT = Path(__file__).resolve().parents[2]
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@dataclass
class Outcome:
    summary: dict
    exit_status: int
    report: str


class Benchmark:
    def __init__(self, config: Config, config_file: str, console: Callable[[str], None] = print):
        self.config = config
        self.config_file = config_file
        self.console = console
        self.all_skipped = False
        self.start_warnings: list[str] = []

    def prepare(self) -> None:
        """Everything that can fail because of the user's input happens here, before any output is written."""
        config = self.config
        self.family = family_for(config.model.arch)
        refusal = self.family.unsupported_runtime(config.runtime)
        if refusal is not None:
            raise RuntimeNotSupported(refusal)
        self.paths = find_images(config.dataset.path, config.dataset.limit)
        self.network = self.family.load_network(config.model.arch, config.model.weights, config.run.seed)
        check_class_ids(config.postprocess.classes, self.network.class_names, config.model.arch)
        self._check_memory()  # before the runtime: an export traces an input of the configured size
        oversubscribed = threads_warning(config.runtime.threads, *usable_cpus())
        if oversubscribed is not None:
            self.start_warnings.append(oversubscribed)
            self.console(f"WARNING: {oversubscribed}")
        self.truth = (load_ground_truth(config.dataset.labels, config.dataset.path, self.paths,
                                        self.network.class_names) if config.dataset.labels else None)
        runtime = config.runtime
        # The config refuses options a backend cannot take; each backend gets only its own.
        options = ({"channels_last": runtime.channels_last, "compile": runtime.compile} if runtime.backend == "torch"
                   else {"cache_dir": runtime.cache_dir})
        self.scored_paths, self.calibration = self.paths, None
        if runtime.precision == "int8":
            own = find_images(runtime.calibration.path) if runtime.calibration.path else None
            chosen, self.scored_paths = calibration_split(self.paths, runtime.calibration.images, own)
            self.calibration = calibration_document(chosen, self.scored_paths, Path(config.dataset.path),
                                                    runtime.calibration.path)
            options["calibration"] = calibration_inputs(
                self.family, self.network, config.preprocess, config.postprocess, chosen,
                runtime.calibration.images, runtime.calibration.keep_float, config.dataset.max_pixels)
        self.runtime = build_runtime(runtime.backend, fuse=config.model.fuse, threads=runtime.threads,
                                     precision=runtime.precision, streams=runtime.streams,
                                     pinning=runtime.pinning, **options)
        if runtime.backend != "torch":
            self.console(f"Preparing {runtime.backend} (the ONNX export is cached; the first one takes a while)...")
            if runtime.precision == "int8":
                self.console(f"int8: calibrating on {options['calibration'].images} images "
                             f"({self.calibration['source']}; the quantized model is cached too)...")
        self.forward = self.runtime.prepare(self.network, self.family.example_input(config.preprocess))
        self.pipeline: DetectionPipeline = self.family.build_pipeline(
            self.network, self.forward, config.preprocess, config.postprocess)
        self._reference_forward = None  # the torch fp32 reference, built once when a check needs it
        self.input_shapes = batch_shapes(image_sizes(self.paths, config.dataset.max_pixels), config.dataset.batch_size,
                                         self.pipeline.input_shape)
        self.warmup = choose_warmup(self.input_shapes, config.benchmark.warmup, config.benchmark.warmup_max_batches)
        self.scenario_settings = scenario_settings(config.benchmark)
        self.run_dir = RunDirectory(config.run.output_dir, config.run.id)
        self.run_dir.create()

    def _check_memory(self) -> None:
        """Refuses (exit 2) a batch whose forward cannot fit, before anything of its size is allocated."""
        config, family = self.config, self.family
        fit = measure_fit(*family.memory_probe(self.network, config.postprocess))
        sizes = {f"preprocess.{key}": getattr(config.preprocess, key) for key in family.SIZE_KEYS}
        # A batch never holds more images than the dataset has.
        batch_size = min(config.dataset.batch_size, len(self.paths))
        check_fits(fit, sizes, family.largest_input_area(config.preprocess), batch_size, *available_memory())

    def identity(self) -> RunIdentity:
        config = self.config
        return RunIdentity(
            run_id=config.run.id, config_file=self.config_file, family=self.family.NAME, arch=config.model.arch,
            weights=self.network.weights, random_weights=self.network.random_weights, seed=config.run.seed,
            img_size=self.family.input_size(config.preprocess), batch_size=config.dataset.batch_size,
            runtime=self.runtime.settings(), step_order=step_order(self.pipeline.step_order()))

    def execute(self) -> Outcome:
        """Runs the passes and writes the run record: Ctrl-C and SIGTERM end the passes, never the writing."""
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
        """Logs the complete run directory to MLflow. The directory is the result: a store that cannot be
        reached leaves it as it is and the exit status at 0, with the command that logs it later."""
        settings = self.config.outputs.mlflow
        self.console(f"Logging the run to MLflow at {settings.tracking_uri} (experiment {settings.experiment})...")
        try:
            with stops.ending_passes():
                run_id = log_run_directory(self.run_dir.path, settings.tracking_uri, settings.experiment)
        except TrackingError as error:
            self.console(f"WARNING: MLflow logging failed: {error}. The run directory is complete; log it later "
                         f"with: python -c \"from utils.tracking.mlflow_runs import log_run_directory; "
                         f"log_run_directory('{self.run_dir.path}', '{settings.tracking_uri}', "
                         f"'{settings.experiment}')\"")
            return
        except KeyboardInterrupt as stop:
            self.console(f"MLflow logging stopped ({signal.Signals(signal_of(stop)).name}); the run directory is "
                         "complete, the MLflow run may be left unfinished")
            outcome.exit_status = exit_status(signal_of(stop))
            return
        self.console(f"MLflow: logged as run {run_id} in experiment {settings.experiment}")

    def _execute(self, stops: RunStops) -> Outcome:
        config = self.config
        record = RunRecord(self.identity())
        record.images.found = len(self.paths)
        record.calibration = self.calibration
        record.warnings.extend(self.start_warnings)
        if config.dataset.batch_size > 1 and self.pipeline.batching_note:
            record.notes.append(self.pipeline.batching_note)
        writer = RunWriter(self.run_dir, config.outputs.plots, config.outputs.tensorboard, config.outputs.report)
        if record.identity.random_weights:
            self.console(f"WARNING: no model.weights given: {config.model.arch} runs on {record.identity.weights} "
                         "weights; its boxes are not real detections.")
        try:
            environment = dict(describe_environment(PROJECT_ROOT), runtime=record.identity.runtime)
            writer.write_start(record, config_to_yaml(config), environment)
        except OutputWriteError as error:
            return self._failed_before_start(record, writer, error)
        stop_signal: Optional[int] = None
        failed_writing = False  # a stream cut by a write failure is discarded, never published half-written
        bench = config.benchmark
        energy = EnergyRecorder() if bench.energy.enabled else EnergyRecorder(
            status=RaplStatus(available=False, reason="disabled by the config (benchmark.energy.enabled: false)"))
        memory = MemorySampler(interval_s=bench.memory.interval_s) if bench.memory.enabled else None
        timer = StepTimer([recorder for recorder in (energy, memory) if recorder is not None])
        contention = ContentionRecorder()
        record.steps, record.steps_origin_ns = timer.records, timer.origin_ns
        batches = -(-len(self.paths) // config.dataset.batch_size)
        plan = PassPlan(batches, 0, bench.repeats, bench.min_time_s, bench.layer_timing,
                        bench.layer_timing_batches, bench.profiler, bench.target_ci, bench.max_time_s,
                        warmup_batches=self.warmup.batches, cold_batches=frozenset(self.warmup.cold))
        record.warmup = warmup_document(self.warmup, self.input_shapes)
        if bench.scenario == SINGLE_STREAM and "loadgen" in bench.model_fields_set:
            record.notes.append("benchmark.loadgen is not used: single_stream runs detbench's own passes; set "
                                "benchmark.scenario to multi_stream, server or offline to run under LoadGen")
        self.console(warmup_line(self.warmup))
        progress = tqdm(total=plan.total_batches, unit="batch", desc=config.run.id, disable=None, leave=False)
        loader = leave_stops_to_the_main_process(
            image_loader(self.paths, config.dataset.batch_size, self._workers(record), config.dataset.max_pixels))
        runner = PassRunner(self.pipeline, loader, batches, timer, record.images, on_batch=progress.update,
                            load_batch=self._load_batch)
        started = time.perf_counter()
        detections: Optional[DetectionWriter] = None
        try:
            # The cleanup of the passes (loader workers, memory sampler) is outside ending_passes(): once the
            # passes end, no stop cuts it short.
            with ExitStack() as stack:
                stack.callback(shutdown_workers, loader)
                with stops.ending_passes():
                    detections = DetectionWriter(self.run_dir.path, Path(config.dataset.path),
                                                 self.pipeline.class_names, config.outputs.save_images,
                                                 record.identity.random_weights_note)
                    if memory is not None:
                        stack.enter_context(memory)
                        memory.mark_baseline()
                    if bench.energy.enabled and bench.energy.idle_s > 0:
                        energy.measure_idle(bench.energy.idle_s)
                    with timer.step(RUN_STEP):
                        if bench.scenario == SINGLE_STREAM:
                            self._run_passes(plan, runner, record, detections, progress, contention)
                        else:
                            self._run_scenario(plan, runner, record, detections, progress, contention, timer)
            record.status = Status.COMPLETE
            record.wall_s = time.perf_counter() - started
            with stops.ending_passes():
                self._accuracy_pass(record, timer)
            if self._needs_reference():
                with stops.ending_passes():
                    self._check_agreement(record)
        except KeyboardInterrupt as stop:
            stop_signal = signal_of(stop)
            record.status, record.stop_reason = Status.INTERRUPTED, signal.Signals(stop_signal).name
            self.console(f"Interrupted ({record.stop_reason}): writing what was measured so far.")
        except OutputWriteError as error:
            record.status, record.stop_reason = Status.FAILED, str(error)
            failed_writing = True
        except Exception as error:
            # A bug, not a user's mistake: the record says failed and keeps what was measured, then the
            # traceback follows.
            record.status, record.stop_reason = Status.FAILED, f"{type(error).__name__}: {error}"
            self._finish(record, writer, detections, energy, memory, stops, stop_signal, failed_writing)
            raise
        finally:
            progress.close()
        if record.wall_s is None:
            record.wall_s = time.perf_counter() - started
        if record.status == Status.COMPLETE and record.images.processed == 0 and record.images.skipped:
            # Nothing was measured: the dataset, not the harness, is at fault (exit status 2).
            self.all_skipped = True
            record.status, record.stop_reason = Status.FAILED, (
                f"every image was skipped ({record.images.skipped} of {record.images.found}): {layout.SKIPPED} in "
                f"{self.run_dir.path} says why for each one")
        record.contention = contention.summary()
        if (verdict := contention_verdict(record.contention)) is not None:
            record.warnings.append(verdict)
        return self._finish(record, writer, detections, energy, memory, stops, stop_signal, failed_writing)

    def _load_batch(self, index: int) -> list:
        size = self.config.dataset.batch_size
        return [decode_image(path, self.config.dataset.max_pixels)
                for path in self.paths[index * size:(index + 1) * size]]

    def _workers(self, record: RunRecord) -> int:
        """Decoding in a worker process overlaps the forward but takes a core from it: by default only where a
        core is left beside the compute threads; a user's choice that takes one is reported."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        threads = int(record.identity.runtime.get("threads") or 1)
        workers = self.config.dataset.workers
        if workers is None:
            return 1 if cores > threads else 0
        if workers and workers + threads > cores:
            record.warnings.append(
                f"dataset.workers {workers} with {threads} compute thread(s) on {cores} core(s): decoding takes "
                "cores from the forward while it runs, which slows it; leave dataset.workers unset to decode "
                "between forwards instead")
        return workers

    def _run_passes(self, plan: PassPlan, runner: PassRunner, record: RunRecord, detections: DetectionWriter,
                    progress: tqdm, contention: ContentionRecorder) -> None:
        for planned in plan.passes():
            if planned.kind is PassKind.LAYERS:
                self._layer_pass(runner, planned, record)
            elif planned.kind is PassKind.PROFILER:
                self._profiler_pass(runner, planned, record)
            else:
                first_new = len(record.steps)
                with contention if planned.kind is PassKind.TIMED else nullcontext():
                    runner.run(planned, detections if planned.writes_outputs else None)
                if planned.kind is PassKind.TIMED:
                    # What min_time_s asks for is measured pipeline time, not the writing of images.
                    batches = [r for r in record.steps[first_new:] if r.step == PIPELINE_STEP and r.images]
                    plan.add_measured(sum(r.ms for r in batches) / 1e3, [r.ms / r.images for r in batches])
                    record.timed_passes += 1
                if planned.writes_outputs:
                    # Detections go under their real name now, so an interrupted run still has them.
                    detections.close()
            progress.total = plan.total_batches
            progress.refresh()

    def _run_scenario(self, plan: PassPlan, runner: PassRunner, record: RunRecord, detections: DetectionWriter,
                      progress: tqdm, contention: ContentionRecorder, timer: StepTimer) -> None:
        """The warm-up as for the passes, then one LoadGen test in place of the timed passes."""
        warmup = next((p for p in plan.passes() if p.kind is PassKind.WARMUP), None)
        if warmup is not None:
            runner.run(warmup)
            # Twice more a batch of a shape already run: warm, so its time says what rate LoadGen should expect.
            first_new = len(record.steps)
            for probe in (1, 2):
                runner.run(PlannedPass(PassKind.WARMUP, probe, 1, batch_indices=(self.warmup.batches[0],)))
            warm = warm_ms_per_image(record.steps[first_new:])
        else:
            warm = []
        accuracy = self.config.benchmark.loadgen.mode == "accuracy"
        progress.reset(total=None)
        scenario = ScenarioRun(self.scenario_settings, self.pipeline, self.paths, self.config.dataset.batch_size,
                               self.config.benchmark.loadgen.performance_sample_count, timer,
                               {self.input_shapes[index] for index in self.warmup.batches},
                               self.run_dir.path / layout.LOADGEN_DIR, detections if accuracy else None,
                               on_batch=progress.update, streams=self.config.runtime.streams,
                               max_pixels=self.config.dataset.max_pixels)
        self.console(f"{self.scenario_settings.scenario}: MLPerf LoadGen drives the pipeline "
                     f"({self.config.benchmark.loadgen.mode} mode, at least "
                     f"{self.scenario_settings.min_duration_s:g} s and {self.scenario_settings.min_query_count} "
                     f"queries); its logs go to {layout.LOADGEN_DIR}/")
        try:
            with contention:
                # Streams answer at once: the probe's single-request rate times their number.
                scenario.start(expected_rate(warm, len(self.paths)) * self.config.runtime.streams)
                scenario.wait()
        except KeyboardInterrupt:
            self.console("Stopping LoadGen: the remaining queries are answered empty...")
            scenario.stop()
            raise
        finally:
            record.steps.extend(scenario.worker_records())
            record.scenario = scenario.document()
            record.timed_passes = 1 if scenario.answers.batches else 0
            if accuracy:
                record.images.processed = detections.images_written
                record.images.skipped = detections.skipped
                record.images.detections = detections.detections_written
        if accuracy and self.truth is not None:
            # LoadGen's accuracy mode answered every sample once; its log is scored against the labels.
            log = json.loads((self.run_dir.path / layout.LOADGEN_ACCURACY).read_text())
            record.scenario["accuracy"] = dict(
                accuracy_log_map(log, self.truth.images, self.network.class_names),
                settings="the run's postprocess settings, with which the queries were answered",
                ground_truth=self.truth.source)

    def _needs_reference(self) -> bool:
        runtime = self.config.runtime
        return self.config.benchmark.agreement.enabled and (
            runtime.backend != "torch" or runtime.precision != "fp32" or runtime.channels_last or runtime.compile)

    def _check_agreement(self, record: RunRecord) -> None:
        """Outside every timed pass: a second, fp32 copy of the network runs the first images."""
        config, check = self.config, self.config.benchmark.agreement
        scored = (record.accuracy or {}).get("images", len(self._accuracy_paths()))
        count = agreement_count(check.images, "images" in check.model_fields_set, self.truth is not None, scored)
        self.console(f"Checking detections against the torch fp32 reference on the first {count} scored images...")
        reference, network = self._reference(config.postprocess)
        decoded = [image.image for image in (decode_image(path, config.dataset.max_pixels)
                                             for path in self.scored_paths[:count]) if image.image is not None]
        size = config.dataset.batch_size
        batches = [decoded[start:start + size] for start in range(0, len(decoded), size)]
        fused = config.model.fuse and network.fuse is not None
        record.agreement = apply_budget(
            compare_with_reference(self.pipeline, reference, batches, check.top_k, self.pipeline.score_threshold,
                                   reference_name="torch fp32 eager" + (" (fused)" if fused else "")),
            record.accuracy, config.benchmark.accuracy.max_drop)
        record.warnings.extend(verdict_warnings(record.agreement))

    def _reference(self, postprocess) -> tuple[DetectionPipeline, object]:
        """The torch fp32 reference pipeline with these postprocess settings (one network for all of them)."""
        config = self.config
        if self._reference_forward is None:
            network = self.family.load_network(config.model.arch, config.model.weights, config.run.seed)
            self._reference_forward = (TorchEager(fuse=config.model.fuse).prepare(
                network, self.family.example_input(config.preprocess)), network)
        forward, network = self._reference_forward
        return self.family.build_pipeline(network, forward, config.preprocess, postprocess), network

    def _accuracy_paths(self) -> list:
        """The images the accuracy pass scores: never the ones int8 was calibrated on."""
        return accuracy_pass.accuracy_images(self.scored_paths, self.config.benchmark.accuracy.images,
                                             self.truth is not None, self.config.benchmark.agreement.images)

    def _accuracy_pass(self, record: RunRecord, timer: StepTimer) -> None:
        """mAP at the accuracy settings, outside the timed passes: against the labels, and with a reference
        the drop; without labels, against the reference's detections, when the run has a reference."""
        config, settings = self.config, self.config.benchmark.accuracy
        with_reference = self._needs_reference()
        if not settings.enabled or (self.truth is None and not with_reference):
            return
        paths = self._accuracy_paths()
        postprocess, stated = accuracy_pass.map_postprocess(self.family.NAME, config.postprocess, settings)
        accuracy_pass.progress_line(self.console, len(paths), self.truth is not None, with_reference)
        candidate_pipeline = self.family.build_pipeline(self.network, self.forward, config.preprocess, postprocess)
        candidate, reference = [], [] if with_reference else None
        while True:
            new = paths[len(candidate):]
            candidate += accuracy_pass.detect(candidate_pipeline, new, config.dataset.batch_size, "accuracy pass",
                                              config.dataset.max_pixels, timer)
            if with_reference:
                reference += accuracy_pass.detect(self._reference(postprocess)[0], new, config.dataset.batch_size,
                                                  "reference at mAP settings", config.dataset.max_pixels)
            result = accuracy_pass.evaluate(candidate, reference, self.truth, self.network.class_names, stated,
                                            self.pipeline.score_threshold, settings.bootstrap, config.run.seed,
                                            "torch fp32 eager", settings.max_drop)
            wanted = more_images(result.summary.get("label_free"), len(paths), len(self.scored_paths),
                                 settings.max_images)
            if wanted is None:
                break
            self.console(f"Label-free verdict undecided on {len(paths)} images: scoring {wanted} (cap "
                         f"benchmark.accuracy.max_images {settings.max_images})...")
            paths = self.scored_paths[:wanted]
        result.summary["images_first_used"] = len(self._accuracy_paths())
        record.accuracy, record.accuracy_classes = result.summary, result.classes

    def _layer_pass(self, runner: PassRunner, planned: PlannedPass, record: RunRecord) -> None:
        targets = self.pipeline.layer_timing_targets()
        if targets.model is None:
            self._runtime_layer_pass(runner, planned, record)
            return
        with warnings.catch_warnings(record=True):  # the snapshot carries them; reported once below
            warnings.simplefilter("always")
            with ModelTiming(targets.model, pre_transforms=targets.pre_transforms,
                             post_transforms=targets.post_transforms,
                             functional_paths=targets.functional_paths) as timing:
                runner.run(planned)
        record.layer_timing = timing.snapshot()
        for message in record.layer_timing.warnings:
            record.warnings.append(message)
            self.console(f"WARNING: {message}")

    def _runtime_layer_pass(self, runner: PassRunner, planned: PlannedPass, record: RunRecord) -> None:
        """A runtime outside torch times its layers with its own profiler."""
        if not profiles_layers(self.runtime.name):
            record.warnings.append(f"layer timing skipped: {self.runtime.name} with these settings runs no torch "
                                   "module hooks can see and has no profiler of its own here (torch.compile)")
            return
        first_new = len(record.steps)
        with RuntimeProfile(self.runtime) as profile:
            runner.run(planned)
        forwards = [r for r in record.steps[first_new:] if r.step == FORWARD_STAGE]
        record.layer_timing, record.layer_timing_source = profile.timing(len(forwards),
                                                                         sum(r.images for r in forwards))

    def _profiler_pass(self, runner: PassRunner, planned: PlannedPass, record: RunRecord) -> None:
        targets, ranges = self.pipeline.layer_timing_targets(), StepRanges()
        runner.timer.listeners.append(ranges)
        try:
            with RuntimeTrace(self.runtime) as runtime_trace:
                profile = profile_pipeline(lambda: runner.run(planned), targets.model, targets.pre_transforms,
                                           targets.post_transforms)
        finally:
            runner.timer.listeners.remove(ranges)
        record.profile, trace_warnings = viewer_profile(profile, record.identity.arch, record.identity.runtime,
                                                        runtime_trace.events)
        record.warnings.extend(trace_warnings)

    def _collect(self, record: RunRecord, energy: EnergyRecorder, memory: Optional[MemorySampler]) -> None:
        images = sum(r.images for r in record.steps if r.step == PIPELINE_STEP)
        record.energy = energy.summary(images=images)
        if energy.available:
            record.energy_table = Table(energy.rows(), tuple(energy.columns()))
        if memory is not None:
            record.memory = memory.summary()
            record.memory_samples = Table(memory.rows(), MEMORY_COLUMNS)
            record.memory_steps = Table(memory.step_rows(), MEMORY_STEP_COLUMNS)
        else:
            record.memory = {"status": "disabled"}

    def _finish(self, record: RunRecord, writer: RunWriter, detections: Optional[DetectionWriter],
                energy: EnergyRecorder, memory: Optional[MemorySampler], stops: RunStops,
                stop_signal: Optional[int], failed_writing: bool) -> Outcome:
        """Writes the record; a stop that arrives meanwhile is only noted (see RunStops)."""
        self._collect(record, energy, memory)
        try:
            if detections is not None:
                if failed_writing:
                    detections.discard()
                else:
                    detections.close()
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
            return Outcome(summary, EXIT_USAGE if self.all_skipped else EXIT_FAILED, report)
        stop = stop_signal or stops.received
        return Outcome(summary, exit_status(stop) if stop else EXIT_OK, report)

    def _write_failed_summary(self, writer: RunWriter, record: RunRecord) -> dict:
        try:
            return writer.write_summary(record)
        except OutputWriteError:
            return summary_document(record)

    def _failed_before_start(self, record: RunRecord, writer: RunWriter, error: OutputWriteError) -> Outcome:
        record.finish(Status.FAILED, str(error))
        summary = self._write_failed_summary(writer, record)
        return Outcome(summary, EXIT_FAILED, format_summary(summary, self.run_dir.path))
