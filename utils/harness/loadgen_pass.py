"""multi_stream, server and offline: the warm-up as for single_stream, then one LoadGen test (scenario.py) in
place of the timed passes, with the timed passes' recorders listening."""
from __future__ import annotations

import json
from typing import Callable, Optional

from datasets.image_folder import LoadedImage, decode_image
from datasets.labels import GroundTruth
from pipelines.contract import DetectionPipeline
from utils.harness.input_shapes import AUTO, Shape, WarmupChoice, loadgen_batch_shapes
from utils.harness.loadgen_bounds import LoadgenPlan, check_plan
from utils.harness.memory_fit import available_memory
from utils.harness.pass_plan import PassPlan, PlannedPass
from utils.harness.passes import PassProgress
from utils.harness.runner import PassRunner
from utils.harness.scenario import ScenarioRun, ScenarioSettings, expected_rate, warm_ms_per_image
from utils.record.loadgen_results import accuracy_log_map
from utils.record.run_record import RunRecord
from utils.record.steps import PassKind
from utils.writers import layout
from utils.writers.detections import DetectionWriter


class LoadgenPass:
    def __init__(self, config, settings: ScenarioSettings, pipeline: DetectionPipeline, paths: list,
                 sizes: list, input_shapes: list, warmup: WarmupChoice, runner: PassRunner, record: RunRecord,
                 detections: DetectionWriter, progress: PassProgress, run_dir, class_names,
                 truth: Optional[GroundTruth], console: Callable[[str], None],
                 planner: Callable[[Optional[float]], LoadgenPlan], streams: int = 1):
        self.config, self.settings, self.pipeline, self.paths = config, settings, pipeline, paths
        self.input_shapes, self.warmup, self.runner, self.record = input_shapes, warmup, runner, record
        self.sizes = sizes  # each image's (height, width) from its header, None when skipped
        self.detections, self.progress, self.run_dir = detections, progress, run_dir
        self.class_names, self.truth, self.console = class_names, truth, console
        self.planner = planner  # what LoadGen will build at a rate (loadgen_bounds), bounded before it starts
        self.streams = streams  # as the runtime resolved runtime.streams (auto included)

    def run(self, plan: PassPlan) -> None:
        warm = self._warm_up(plan)
        config, settings, record, detections = self.config, self.settings, self.record, self.detections
        accuracy = config.benchmark.loadgen.mode == "accuracy"
        # Streams answer at once: the probe's single-request rate times their number.
        expected = expected_rate(warm, len(self.paths)) * self.streams
        planned = self.planner(expected if warm else None)
        check_plan(settings, planned, *available_memory())
        self.console(f"LoadGen plan: {planned.describe()}")
        warm_batches, warmed = self._stream_warmup()
        scenario = ScenarioRun(settings, self.pipeline, self.paths, config.dataset.batch_size,
                               config.benchmark.loadgen.performance_sample_count, self.runner.timer, warmed,
                               self.run_dir / layout.LOADGEN_DIR, detections if accuracy else None,
                               on_batch=self.progress.advance, streams=self.streams,
                               max_pixels=config.dataset.max_pixels, warm_batches=warm_batches,
                               on_warm=self.progress.advance)
        self.console(f"{settings.scenario}: MLPerf LoadGen drives the pipeline ({config.benchmark.loadgen.mode} "
                     f"mode, at least {settings.min_duration_s:g} s and {settings.min_query_count} queries); "
                     f"its logs go to {layout.LOADGEN_DIR}/")
        try:
            self.progress.start(PassKind.WARMUP)  # each stream's own, on its worker's thread
            self.progress.add(self.streams * sum(len(batch) for batch in warm_batches))
            scenario.start_workers()
            self.progress.start(PassKind.TIMED)
            self.progress.add(planned.samples)
            with self.runner.recorders.listening(PassKind.TIMED):
                scenario.start(expected)
                scenario.wait()
        except KeyboardInterrupt:
            self.console("Stopping LoadGen: the remaining queries are answered empty...")
            scenario.stop()
            raise
        finally:
            scenario.release()
            record.steps.extend(scenario.worker_records())
            record.scenario = scenario.document()
            record.timed_passes = 1 if scenario.answers.batches else 0
            # LoadGen, not the dataset's order, decided which batches ran cold.
            record.warmup["cold_shapes"] = list(scenario.answers.cold)
            if accuracy:
                record.images.processed = detections.images_written
                record.images.skipped = detections.skipped
                record.images.detections = detections.detections_written
        if accuracy and self.truth is not None:
            # LoadGen's accuracy mode answered every sample once; its log is scored against the labels.
            log = json.loads((self.run_dir / layout.LOADGEN_ACCURACY).read_text())
            record.scenario["accuracy"] = dict(
                accuracy_log_map(log, self.truth.images, self.class_names),
                settings="the run's postprocess settings, with which the queries were answered",
                ground_truth=self.truth.source)

    def _stream_warmup(self) -> tuple[list[list[LoadedImage]], set[Shape]]:
        """What each stream runs before LoadGen starts, and the shapes that leaves warm: the plan's warm-up
        batches, then (warmup: auto) one batch of each further shape LoadGen's batches can take, within
        benchmark.warmup_max_batches."""
        config = self.config
        batches = [self.runner.load_batch(index) for index in self.warmup.batches]
        warmed = {self.input_shapes[index] for index in self.warmup.batches}
        reachable = loadgen_batch_shapes(self.sizes, config.dataset.batch_size, self.pipeline.input_shape)
        extra: list[tuple[Shape, tuple[int, ...]]] = []
        if self.warmup.mode == AUTO:
            room = max(config.benchmark.warmup_max_batches - len(batches), 0)
            extra = [(shape, indices) for shape, indices in reachable.items() if shape not in warmed][:room]
        # Each image once, however many batches and places in a batch repeat it: the batches are held until the
        # test ends, and a full batch of a pair is one image repeated batch_size - 1 times.
        decoded = {index: decode_image(self.paths[index], config.dataset.max_pixels)
                   for index in sorted({index for _, indices in extra for index in indices})}
        for shape, indices in extra:
            batches.append([decoded[index] for index in indices])
            warmed.add(shape)
        covered = len(reachable.keys() & warmed)
        self.record.warmup["loadgen"] = {"batch_shapes": len(reachable), "warmed_shapes": covered,
                                         "batches_per_stream": len(batches),
                                         "extra_batches": [list(indices) for _, indices in extra]}
        line = (f"Warm-up of each stream for LoadGen: {len(batches)} batch(es) covering {covered} of "
                f"{len(reachable)} input shape(s) its batches can take")
        if covered < len(reachable):
            how = (f"benchmark.warmup_max_batches {config.benchmark.warmup_max_batches}"
                   if self.warmup.mode == AUTO else f"benchmark.warmup {len(self.warmup.batches)}")
            line += (f" ({how}); a batch of another shape runs cold and is reported apart (summary.json "
                     "warmup.cold_shapes)")
        self.console(line)
        return batches, warmed

    def _warm_up(self, plan: PassPlan) -> list[float]:
        """The plan's warm-up, then twice more a batch of a shape already run: warm, so its time says what
        rate LoadGen should expect (per image, ms)."""
        warmup = next((p for p in plan.passes() if p.kind is PassKind.WARMUP), None)
        if warmup is None:
            return []
        self.progress.start(PassKind.WARMUP)
        self.runner.run(warmup)
        first_new = len(self.record.steps)
        for probe in (1, 2):
            self.runner.run(PlannedPass(PassKind.WARMUP, probe, 1, batch_indices=(self.warmup.batches[0],)))
        return warm_ms_per_image(self.record.steps[first_new:])
