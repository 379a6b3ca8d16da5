"""utils.scenarios.loadgen.loadgen_pass: under LoadGen (multi_stream, server, offline) the warm-up runs as for
single_stream, two probe batches tell LoadGen what rate to expect, and each stream warms the input shapes
LoadGen's batches can take before the test starts.

Tested on a fake runner and a hand-made shape rule (the LoadGen test itself needs mlperf_loadgen and whole
runs, covered by test_scenarios): which extra warm-up batches auto adds within warmup_max_batches, that each
image is decoded once however often a batch repeats it, what the record and console say of the shapes left
cold, and that the probes' per-image times (load left out) are what the rate comes from."""
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from datasets.image_folder import DatasetBatches
from utils.scenarios.input_shapes import AUTO, WarmupChoice
from utils.scenarios.loadgen.loadgen_pass import LoadgenPass, LoadgenTest, LoadgenImages
from utils.scenarios.pass_plan import PassPlan, PassSchedule, WarmupBatches
from utils.scenarios.context import PassContext
from utils.record.steps import LOAD_STEP, PIPELINE_STEP, PassKind, StepRecord

SIZES = [(10, 20), (20, 10), (10, 20)]  # (height, width) of three images; the loader's batches: [0, 1], [2]


def input_shape(sizes):
    """A batch's shape: its image count, then its tallest height and widest width."""
    return (len(sizes), max(h for h, _ in sizes), max(w for _, w in sizes))


class Runner:
    """A run adds a pipeline and a load step per batch, the pipeline taking
    `pipeline_ms` of which 2 ms load, for 2 images."""

    def __init__(self, record, pipeline_ms=(10.0,)):
        self.record, self.pipeline_ms, self.runs = record, list(pipeline_ms), []

    def run(self, planned):
        self.runs.append(planned)
        ms = self.pipeline_ms.pop(0)
        for step, duration in ((PIPELINE_STEP, ms), (LOAD_STEP, 2.0)):
            self.record.steps.append(StepRecord(step, None, planned.kind, planned.index, 0, 2, 0,
                                                int(duration * 1e6)))


class Progress:
    def __init__(self):
        self.started = []

    def start(self, kind):
        self.started.append(kind)


@pytest.fixture
def paths(tmp_path):
    files = []
    for i, (height, width) in enumerate(SIZES):
        files.append(tmp_path / f"{i}.png")
        cv2.imwrite(str(files[-1]), np.zeros((height, width, 3), np.uint8))
    return files


def loadgen_pass(paths, mode=AUTO, warmup_max_batches=3, pipeline_ms=(10.0,)):
    sections = SimpleNamespace(dataset=SimpleNamespace(batch_size=2, max_pixels=None),
                               benchmark=SimpleNamespace(warmup_max_batches=warmup_max_batches))
    built = SimpleNamespace(sections=sections, pipeline=SimpleNamespace(input_shape=input_shape),
                            network=SimpleNamespace(class_names=[]), truth=None, runtime=SimpleNamespace(streams=1))
    images = LoadgenImages(DatasetBatches(paths, 2), SIZES, [input_shape(SIZES[:2]), input_shape(SIZES[2:])], [],
                           WarmupChoice(mode, (0,), 2, warmup_max_batches))
    test = LoadgenTest(run=built, settings=None, images=images, run_dir=None)
    record = SimpleNamespace(warmup={}, steps=[])
    lines = []
    context = PassContext(Runner(record, pipeline_ms), record, None, Progress(), lines.append)
    return LoadgenPass(test, context), lines


def test_auto_warmup_adds_batches_of_cold_shapes_within_the_cap(paths):
    # Reachable: (2,10,20) by [0,0], (2,20,20) by [0,1], (2,20,10) by [1,1], (1,10,20) by [0], (1,20,10) by [1].
    # Batch 0 ([0,1]) warms (2,20,20); a cap of 3 leaves room for the first two cold shapes.
    step, lines = loadgen_pass(paths)
    batches, warmed = step._stream_warmup()
    assert [image.path for image in batches[0]] == [str(paths[0]), str(paths[1])]  # the dataset's batch 0
    assert [[image.path for image in batch] for batch in batches[1:]] == [[str(paths[0])] * 2, [str(paths[1])] * 2]
    assert warmed == {(2, 20, 20), (2, 10, 20), (2, 20, 10)}
    assert step.record.warmup["loadgen"] == {"batch_shapes": 5, "warmed_shapes": 3, "batches_per_stream": 3,
                                             "extra_batches": [[0, 0], [1, 1]]}
    assert lines == ["Warm-up of each stream for LoadGen: 3 batch(es) covering 3 of 5 input shape(s) its batches "
                     "can take (benchmark.warmup_max_batches 3); a batch of another shape runs cold and is reported "
                     "apart (summary.json warmup.cold_shapes)"]


def test_an_image_repeated_in_a_batch_is_decoded_once(paths):
    step, _ = loadgen_pass(paths)
    batches, _ = step._stream_warmup()
    assert batches[1][0] is batches[1][1]
    assert batches[1][0].image.shape == (10, 20, 3)


def test_auto_warmup_with_room_for_every_shape_leaves_none_cold(paths):
    step, lines = loadgen_pass(paths, warmup_max_batches=10)
    batches, warmed = step._stream_warmup()
    assert len(batches) == 5 and len(warmed) == 5
    assert lines == ["Warm-up of each stream for LoadGen: 5 batch(es) covering 5 of 5 input shape(s) its batches "
                     "can take"]


def test_a_fixed_warmup_adds_nothing_and_names_its_own_setting(paths):
    step, lines = loadgen_pass(paths, mode="batches")
    batches, warmed = step._stream_warmup()
    assert [[image.path for image in batch] for batch in batches] == [[str(paths[0]), str(paths[1])]]
    assert warmed == {(2, 20, 20)}
    assert "covering 1 of 5 input shape(s) its batches can take (benchmark.warmup 1);" in lines[0]


def test_warm_up_runs_two_probes_of_a_warm_batch_and_times_them_without_loading(paths):
    step, _ = loadgen_pass(paths, pipeline_ms=(50.0, 10.0, 8.0))
    plan = PassPlan(PassSchedule(), (1,) * 2, WarmupBatches(count=1))
    assert step._warm_up(plan) == [4.0, 3.0]  # (10 - 2) / 2 and (8 - 2) / 2: the warm-up's 50 ms left out
    runs = step.runner.runs
    assert [(run.kind, run.index, run.batch_indices) for run in runs[1:]] == [
        (PassKind.WARMUP, 1, (0,)), (PassKind.WARMUP, 2, (0,))]
    assert step.progress.started == [PassKind.WARMUP]


def test_without_a_warmup_pass_there_are_no_probes(paths):
    step, _ = loadgen_pass(paths)
    plan = PassPlan(PassSchedule(), (1,) * 2)
    assert step._warm_up(plan) == []
    assert step.runner.runs == []
