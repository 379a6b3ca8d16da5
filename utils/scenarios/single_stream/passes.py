"""The passes of single_stream, each a handler over the pass runner's loop: warm-up, timed, layer timing
(forward hooks, or a runtime's own profiler) and the profiled batch. The plan (pass_plan.py) says which run in
which order; the runner lets the recorders that the pass's kind names listen (utils/measure/listening.py).
"""
from __future__ import annotations

import warnings
from typing import Callable

from pipelines.contract import FORWARD_STAGE, DetectionPipeline
from pipelines.runtimes.base import Runtime
from utils.scenarios.pass_plan import PassPlan, PlannedPass
from utils.scenarios.context import PassContext
from utils.record.run_record import RunRecord
from utils.record.steps import PIPELINE_STEP, PassKind
from utils.measure.layers.model_timing import ModelTiming
from utils.measure.layers.profiler import StepRanges, profile_pipeline
from pipelines.runtimes.registry import SPECS
from utils.measure.layers.runtime_layers import RuntimeProfile, profiles_layers
from utils.measure.layers.runtime_trace import RuntimeTrace, viewer_profile


class SingleStreamPasses:
    def __init__(self, plan: PassPlan, context: PassContext, pipeline: DetectionPipeline, runtime: Runtime):
        self.plan, self.runner, self.record = plan, context.runner, context.record
        self.detections, self.progress, self.console = context.detections, context.progress, context.console
        self.after_pass = context.after_pass
        self.pipeline, self.runtime = pipeline, runtime
        self.handlers: dict[PassKind, Callable[[PlannedPass], None]] = {
            PassKind.WARMUP: self.runner.run, PassKind.TIMED: self.timed, PassKind.LAYERS: self.layers,
            PassKind.PROFILER: self.profiler}

    def run(self) -> None:
        for planned in self.plan.passes():
            self.progress.start(planned.kind, planned.index)
            self.handlers[planned.kind](planned)
            self.after_pass(planned)
            self.progress.grow(self.plan.total_images)

    def timed(self, planned: PlannedPass) -> None:
        record = self.record
        first_new = len(record.steps)
        self.runner.run(planned, self.detections if planned.writes_outputs else None)
        # What min_time_s asks for is measured pipeline time, not the writing of images.
        batches = [r for r in record.steps[first_new:] if r.step == PIPELINE_STEP and r.images]
        self.plan.add_measured(sum(r.ms for r in batches) / 1e3, [r.ms / r.images for r in batches])
        record.timed_passes += 1
        if planned.writes_outputs:
            # Detections go under their real name now, so an interrupted run still has them.
            self.detections.close()

    def layers(self, planned: PlannedPass) -> None:
        record = self.record
        targets = self.pipeline.layer_timing_targets()
        if targets.model is None:
            self._runtime_layers(planned)
            return
        with warnings.catch_warnings(record=True):  # the snapshot carries them; reported once below
            warnings.simplefilter("always")
            with ModelTiming(targets.model, pre_transforms=targets.pre_transforms,
                             post_transforms=targets.post_transforms,
                             functional_paths=targets.functional_paths) as timing:
                self.runner.run(planned)
        record.layer_timing = timing.snapshot()
        for message in record.layer_timing.warnings:
            record.warn(message)
            self.console(f"WARNING: {message}")

    def _runtime_layers(self, planned: PlannedPass) -> None:
        """A runtime outside torch times its layers with its own profiler."""
        record = self.record
        if not profiles_layers(self.runtime.name):
            why = SPECS[self.runtime.name].no_layer_timing or "has no profiler of its own here (torch.compile)"
            record.warn(f"layer timing skipped: {self.runtime.name} with these settings runs no torch module hooks "
                        f"can see, and {why}")
            return
        first_new = len(record.steps)
        with RuntimeProfile(self.runtime) as profile:
            self.runner.run(planned)
        forwards = [r for r in record.steps[first_new:] if r.step == FORWARD_STAGE]
        record.layer_timing, record.layer_timing_source = profile.timing(len(forwards),
                                                                         sum(r.images for r in forwards))

    def profiler(self, planned: PlannedPass) -> None:
        record, timer = self.record, self.runner.timer
        targets, ranges = self.pipeline.layer_timing_targets(), StepRanges()
        timer.listeners.append(ranges)  # the profiler's own recorder: step ranges in its trace
        try:
            with RuntimeTrace(self.runtime) as runtime_trace:
                profile = profile_pipeline(lambda: self.runner.run(planned), targets.model, targets.pre_transforms,
                                           targets.post_transforms)
        finally:
            timer.listeners.remove(ranges)
        record.profile, trace_warnings = viewer_profile(profile, record.identity.arch, record.identity.runtime,
                                                        runtime_trace.events)
        record.warn(*trace_warnings)
