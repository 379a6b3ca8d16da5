"""multi_stream, server and offline: the warm-up as for single_stream, then one LoadGen test (test.py) in
place of the timed passes, with the timed passes' recorders listening."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from datasets.image_folder import LoadedImage
from datasets.item_batches import ItemBatches
from utils.scenarios.input_shapes import AUTO, Shape, WarmupChoice, loadgen_batch_shapes
from utils.scenarios.loadgen.bounds import check_plan
from utils.scenarios.loadgen.bounds import plan as loadgen_plan
from utils.preflight.memory_fit import available_memory
from utils.scenarios.pass_plan import PassPlan, PlannedPass
from utils.scenarios.context import PassContext
from utils.scenarios.loadgen.test import (AnswerSinks, ScenarioImages, ScenarioRun, ScenarioSettings, expected_rate,
                                    warm_ms_per_image)
from utils.scenarios.loadgen.results import accuracy_log_map
from utils.record.built_run import BuiltRun
from utils.record.steps import PassKind
from utils.storage import layout


@dataclass(frozen=True)
class LoadgenImages:
    """The run's images (or video frames) as a LoadGen test needs them: the dataset in batches, each item's size (None
    where skipped), the input shape each batch makes, the bytes each decoded item holds (what LoadGen's sample
    buffer will hold), and the warm-up chosen."""

    dataset: ItemBatches
    sizes: list
    input_shapes: list
    image_bytes: list
    warmup: WarmupChoice


@dataclass(frozen=True)
class LoadgenTest:
    """What a LoadGen test runs: the run as built (its pipeline, on as many streams as its runtime resolved
    runtime.streams to, auto included; the class names and labels its accuracy mode scores; the sections it
    reads), the scenario's settings, the images, and where its logs go."""

    run: BuiltRun
    settings: ScenarioSettings
    images: LoadgenImages
    run_dir: Path


class LoadgenPass:
    def __init__(self, test: LoadgenTest, context: PassContext):
        run, images = test.run, test.images
        self.sections, self.settings, self.pipeline = run.sections, test.settings, run.pipeline
        self.dataset, self.samples, self.sizes = images.dataset, len(images.dataset.items), images.sizes
        self.input_shapes, self.image_bytes, self.warmup = images.input_shapes, images.image_bytes, images.warmup
        self.class_names, self.truth, self.run_dir = run.network.class_names, run.truth, test.run_dir
        self.streams = run.runtime.streams
        self.runner, self.record, self.detections = context.runner, context.record, context.detections
        self.progress, self.console = context.progress, context.console

    def run(self, plan: PassPlan) -> None:
        warm = self._warm_up(plan)
        sections, settings, record, detections = self.sections, self.settings, self.record, self.detections
        loadgen = sections.benchmark.loadgen
        accuracy = loadgen.mode == "accuracy"
        # Streams answer at once: the probe's single-request rate times their number.
        expected = expected_rate(warm, self.samples) * self.streams
        planned = loadgen_plan(settings, self.samples, self.image_bytes, expected if warm else None,
                               loadgen.performance_sample_count)
        check_plan(settings, planned, *available_memory())
        self.console(f"LoadGen plan: {planned.describe()}")
        warm_batches, warmed = self._stream_warmup()
        images = ScenarioImages(self.dataset, loadgen.performance_sample_count, warm_batches, warmed)
        sinks = AnswerSinks(self.runner.timer, detections if accuracy else None, self.progress.advance)
        scenario = ScenarioRun(settings, self.pipeline, images, sinks, self.run_dir / layout.LOADGEN_DIR, self.streams)
        self.console(f"{settings.scenario}: MLPerf LoadGen drives the pipeline ({loadgen.mode} "
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
        dataset, warmup_max_batches = self.sections.dataset, self.sections.benchmark.warmup_max_batches
        batches = list(self.dataset.at(self.warmup.batches))
        warmed = {self.input_shapes[index] for index in self.warmup.batches}
        reachable = loadgen_batch_shapes(self.sizes, dataset.batch_size, self.pipeline.input_shape)
        extra: list[tuple[Shape, tuple[int, ...]]] = []
        if self.warmup.mode == AUTO:
            room = max(warmup_max_batches - len(batches), 0)
            extra = [(shape, indices) for shape, indices in reachable.items() if shape not in warmed][:room]
        # Each image once, however many batches and places in a batch repeat it: the batches are held until the
        # test ends, and a full batch of a pair is one image repeated batch_size - 1 times.
        positions = sorted({index for _, indices in extra for index in indices})
        decoded = dict(zip(positions, self.dataset.decode(positions)))
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
            how = (f"benchmark.warmup_max_batches {warmup_max_batches}"
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
