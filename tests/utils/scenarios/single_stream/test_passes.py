"""The passes of single_stream (utils/scenarios/single_stream/passes.py) over a hand-written runner that records a
batch's steps with times it chooses: each planned pass goes to its handler with the progress bar and the journal
told, a timed pass feeds the plan its measured pipeline time (so min_time_s adds passes) and publishes the
detections, layer timing hooks a tiny torch module or says why it is skipped, and the profiled batch's own
listener leaves the timer even when the batch fails."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from pipelines.contract import LayerTimingTargets
from pipelines.runtimes.registry import SPECS
from utils.record.run_record import RunRecord
from utils.record.steps import PIPELINE_STEP, PassKind, StepRecord
from utils.scenarios.context import PassContext
from utils.scenarios.pass_plan import PassPlan, PassSchedule, PlannedPass, WarmupBatches
from utils.scenarios.single_stream.passes import SingleStreamPasses
from tests.support.run_identity import identity

MS = 1_000_000  # nanoseconds


class Runner:
    """Runs a pass as the pass runner would, without a pipeline: per batch, a load step and a pipeline step of
    100 ms over 2 images, and the layer-timing target's model once where there is one."""

    def __init__(self, record: RunRecord, model=None):
        self.record, self.model, self.calls = record, model, []
        self.timer = SimpleNamespace(listeners=[])

    def run(self, planned: PlannedPass, detections=None) -> None:
        self.calls.append((planned.kind, planned.index, detections))
        for batch in range(2):
            start = len(self.record.steps) * 1000 * MS
            self.record.steps += [StepRecord("load", PIPELINE_STEP, planned.kind, planned.index, batch, 2, start,
                                             start + 5 * MS),
                                  StepRecord(PIPELINE_STEP, None, planned.kind, planned.index, batch, 2, start,
                                             start + 100 * MS)]
        if self.model is not None:
            self.model(torch.zeros(1, 3, 4, 4))


class Progress:
    def __init__(self):
        self.said = []

    def start(self, kind, index=0):
        self.said.append(("start", kind, index))

    def grow(self, total):
        self.said.append(("grow", total))


class Writer:
    closed = 0

    def close(self):
        self.closed += 1


def passes(plan: PassPlan, model=None, runtime: str = "torch"):
    record = RunRecord(identity())
    runner, journal, console = Runner(record, model), [], []
    context = PassContext(runner, record, Writer(), Progress(), console.append, journal.append)
    pipeline = SimpleNamespace(layer_timing_targets=lambda: LayerTimingTargets(model))
    return SingleStreamPasses(plan, context, pipeline, SimpleNamespace(name=runtime)), journal, console


def test_each_planned_pass_goes_to_its_handler_with_the_progress_and_the_journal_told():
    plan = PassPlan(PassSchedule(repeats=2), (2, 2), WarmupBatches(count=1))
    run, journal, _ = passes(plan)
    run.run()
    writer = run.detections
    # The warm-up writes nothing; the first timed pass writes the detections, the second none.
    assert run.runner.calls == [(PassKind.WARMUP, 0, None), (PassKind.TIMED, 0, writer), (PassKind.TIMED, 1, None)]
    assert [(planned.kind, planned.index) for planned in journal] == [(PassKind.WARMUP, 0), (PassKind.TIMED, 0),
                                                                     (PassKind.TIMED, 1)]
    assert run.progress.said[:2] == [("start", PassKind.WARMUP, 0), ("grow", plan.total_images)]
    assert run.record.timed_passes == 2 and writer.closed == 1  # published under their name after the first pass


def test_a_timed_pass_measures_its_own_pipeline_steps_with_images():
    plan = PassPlan(PassSchedule(), (2, 2))
    run, _, _ = passes(plan)
    run.record.steps.append(StepRecord(PIPELINE_STEP, None, PassKind.WARMUP, 0, 0, 2, 0, 900 * MS))  # before it
    run.timed(PlannedPass(PassKind.TIMED, 0, None))
    # Two pipeline steps of 100 ms over 2 images each; the load steps and the earlier step are not measured.
    assert plan.measured_s == pytest.approx(0.2) and plan.per_image_ms == pytest.approx([50.0, 50.0])
    assert run.detections.closed == 0  # this pass wrote no detections


def test_min_time_adds_timed_passes_from_what_each_measured():
    plan = PassPlan(PassSchedule(min_time_s=0.5), (2, 2))
    run, _, _ = passes(plan)
    run.run()
    assert run.record.timed_passes == 3  # 0.2 s measured per pass: 0.6 s is the first at least 0.5 s
    assert plan.measured_s == pytest.approx(0.6)


@pytest.mark.parametrize("runtime", ["torch", "litert"])
def test_layer_timing_without_a_torch_module_or_a_profiler_is_skipped_with_why(runtime):
    run, _, _ = passes(PassPlan(PassSchedule(layer_timing=True), (2,)), runtime=runtime)
    run.layers(PlannedPass(PassKind.LAYERS, 0, 1))
    why = SPECS[runtime].no_layer_timing or "has no profiler of its own here (torch.compile)"
    assert run.record.warnings == [f"layer timing skipped: {runtime} with these settings runs no torch module hooks "
                                   f"can see, and {why}"]
    assert run.runner.calls == [] and run.record.layer_timing is None


def test_layer_timing_hooks_the_pipelines_torch_module():
    model = nn.Sequential(nn.Conv2d(3, 2, 1), nn.ReLU())
    run, _, console = passes(PassPlan(PassSchedule(layer_timing=True), (2,)), model=model)
    run.layers(PlannedPass(PassKind.LAYERS, 0, 1))
    timing = run.record.layer_timing
    assert timing is not None and run.runner.calls == [(PassKind.LAYERS, 0, None)]
    calls = {record.name: record.calls for record in timing.records}
    assert calls.get("0") == 1 and calls.get("1") == 1  # the conv and the ReLU, once each
    assert console == [f"WARNING: {message}" for message in timing.warnings]


@pytest.mark.slow  # torch's profiler takes a few seconds to start the first time
def test_the_profilers_step_ranges_stop_listening_even_when_its_batch_fails():
    run, _, _ = passes(PassPlan(PassSchedule(profiler=True), (2,)))
    listening = []

    def failing(planned, detections=None):
        listening.extend(run.runner.timer.listeners)
        raise RuntimeError("the batch failed")

    run.runner.run = failing
    with pytest.raises(RuntimeError, match="the batch failed"):
        run.profiler(PlannedPass(PassKind.PROFILER, 0, 1))
    assert len(listening) == 1 and run.runner.timer.listeners == []
    assert run.record.profile is None
