"""Input shapes known before the timed passes, the warm-up that covers them, and cold batches reported apart."""
import itertools
import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from datasets.image_folder import decode_image, find_images
from pipelines.dense.facts import BUILDERS as DENSE_BUILDERS
from pipelines.rcnn.facts import BUILDERS as RCNN_BUILDERS
from pipelines.torchvision_common.transform import Preprocess as TorchvisionPreprocess, TransformSettings
from tests.support.helpers import quick_args, run_benchmark
from tests.support.paths import ROOT, SAMPLES


def RcnnPreprocess(min_size: int, max_size: int) -> TorchvisionPreprocess:
    return TorchvisionPreprocess(TransformSettings.calibrating(RCNN_BUILDERS["fasterrcnn_resnet50_fpn"], min_size,
                                                               max_size))


SSDLITE = TorchvisionPreprocess(TransformSettings.calibrating(DENSE_BUILDERS["ssdlite320_mobilenet_v3_large"], 0, 0))
from pipelines.yolo.stages import Preprocess as YoloPreprocess
from utils.config.schema import ConfigError, load_config
from utils.scenarios.input_shapes import batch_shapes, choose_warmup, image_sizes, loadgen_batch_shapes, shape_counts
from utils.scenarios.pass_plan import PassPlan, PassSchedule, WarmupBatches
from utils.measure.steps.statistics import summarize_steps, timed_records
from utils.record.steps import PassKind, StepRecord

QUICK = quick_args(96, "preprocess.rect=true", "benchmark.layer_timing=false", "outputs.plots=false",
                   "outputs.save_images=false", "benchmark.repeats=2", "dataset.batch_size=1")
A, B, C = (1, 3, 64, 96), (1, 3, 96, 96), (1, 3, 96, 64)


def test_auto_warms_the_first_batch_of_each_shape_in_dataset_order():
    choice = choose_warmup([A, A, B, None, A, C, B], "auto", cap=32)
    assert choice.batches == (0, 2, 5)
    assert (choice.shapes, choice.warmed_shapes, choice.cold) == (3, 3, {})


def test_the_cap_leaves_later_shapes_cold_at_their_first_timed_batch():
    choice = choose_warmup([A, B, B, C, C, A], "auto", cap=2)
    assert choice.batches == (0, 1)
    assert choice.cold == {3: C}
    assert choice.warmed_shapes == 2


def test_a_count_warms_the_first_batches_and_flags_the_rest_of_the_shapes():
    choice = choose_warmup([A, A, B, A, C], 2, cap=32)
    assert (choice.mode, choice.batches, choice.cap) == ("batches", (0, 1), None)
    assert choice.cold == {2: B, 4: C}
    assert choose_warmup([A, B], 0, cap=32).cold == {0: A, 1: B}
    assert choose_warmup([A], 5, cap=32).batches == (0,)


def test_batches_are_cut_as_the_loader_cuts_them_and_skipped_images_shrink_them():
    sizes = [(10, 20), (30, 10), None, None, (5, 5)]
    shapes = batch_shapes(sizes, 2, lambda kept: (len(kept), max(h for h, _ in kept), max(w for _, w in kept)))
    assert shapes == [(2, 30, 20), None, (1, 5, 5)]
    assert shape_counts(shapes + [(2, 30, 20)]) == [{"shape": [2, 30, 20], "first_batch": 0, "batches": 2},
                                                   {"shape": [1, 5, 5], "first_batch": 2, "batches": 1}]


SIZES = [(480, 640), (640, 480), (333, 517), (100, 100), (37, 401), (721, 64)]


@pytest.mark.parametrize("rect", [True, False])
@pytest.mark.parametrize("img_size", [64, 160, 224])
def test_yolo_shape_from_sizes_is_the_shape_preprocess_makes(rect, img_size):
    preprocess = YoloPreprocess(img_size, rect=rect, pad_value=114, stride=32)
    for start in range(len(SIZES)):
        sizes = SIZES[start:start + 2]
        images = [np.zeros((h, w, 3), np.uint8) for h, w in sizes]
        assert preprocess.batch_shape(sizes) == tuple(preprocess(images).tensor.shape), sizes


@pytest.mark.parametrize("min_size,max_size", [(96, 160), (128, 1333), (200, 210)])
def test_rcnn_shape_from_sizes_is_the_shape_torchvision_transform_makes(min_size, max_size):
    preprocess = RcnnPreprocess(min_size, max_size)
    for start in range(len(SIZES)):
        sizes = SIZES[start:start + 2]
        images = [np.zeros((h, w, 3), np.uint8) for h, w in sizes]
        assert preprocess.batch_shape(sizes) == tuple(preprocess(images).images.tensors.shape), sizes


def test_a_fixed_square_shape_from_sizes_is_the_shape_torchvision_transform_makes():
    for start in range(len(SIZES)):
        sizes = SIZES[start:start + 2]
        images = [np.zeros((h, w, 3), np.uint8) for h, w in sizes]
        assert SSDLITE.batch_shape(sizes) == tuple(SSDLITE(images).images.tensors.shape) == (len(sizes), 3, 320, 320)


@pytest.mark.parametrize("preprocess", [YoloPreprocess(160, rect=True, pad_value=114, stride=32),
                                        YoloPreprocess(160, rect=False, pad_value=114, stride=32),
                                        YoloPreprocess(160, rect=True, pad_value=114, stride=32, evaluation=True),
                                        RcnnPreprocess(96, 160)],
                         ids=["rect", "square", "test.py letterbox", "rcnn"])
@pytest.mark.parametrize("batch_size", [1, 2, 3])
def test_loadgen_batch_shapes_are_every_shape_any_batch_of_the_images_can_take(preprocess, batch_size):
    # The reference: every multiset of 1..batch_size images, as a worker under LoadGen may batch them.
    sizes = [*SIZES, None, (480, 640)]
    valid = [index for index, size in enumerate(sizes) if size is not None]
    every = {preprocess.batch_shape([sizes[i] for i in batch])
             for count in range(1, batch_size + 1) for batch in itertools.combinations_with_replacement(valid, count)}
    found = loadgen_batch_shapes(sizes, batch_size, preprocess.batch_shape)
    assert set(found) == every
    for shape, indices in found.items():  # each shape comes with a batch that takes it
        assert preprocess.batch_shape([sizes[i] for i in indices]) == shape and None not in indices
    counts = [shape[0] for shape in found]
    assert counts == sorted(counts, reverse=True)  # full batches first: what a capped warm-up keeps


def test_loadgen_batch_shapes_hand_case():
    # At 96 with rect: a landscape image is 64 x 96, a portrait one 96 x 64; together they make 96 x 96.
    preprocess = YoloPreprocess(96, rect=True, pad_value=114, stride=32)
    found = loadgen_batch_shapes([(100, 160), (160, 100)], 2, preprocess.batch_shape)
    assert found == {(2, 3, 64, 96): (0, 0), (2, 3, 64 + 32, 96): (0, 1), (2, 3, 96, 64): (1, 1),
                     (1, 3, 64, 96): (0,), (1, 3, 96, 64): (1,)}


def test_sizes_from_headers_match_the_decoded_images_and_unreadable_files_are_decoded_or_none(tmp_path):
    paths = find_images(SAMPLES)
    assert image_sizes(paths) == [decode_image(p).image.shape[:2] for p in paths]
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    assert image_sizes([tmp_path / "broken.jpg"]) == [None]


def test_an_image_over_the_pixel_limit_has_no_size_as_the_loader_will_skip_it():
    paths = find_images(SAMPLES)
    smallest = min(decode_image(p).image.shape[0] * decode_image(p).image.shape[1] for p in paths)
    sizes = image_sizes(paths, max_pixels=smallest)
    assert sizes.count(None) == len(paths) - 1
    assert [decode_image(p, smallest).image is None for p in paths] == [size is None for size in sizes]


def test_a_warmup_of_picked_batches_runs_them_and_only_timed_pass_0_carries_cold_batches():
    plan = PassPlan(PassSchedule(repeats=2), (1,) * 4, WarmupBatches(indices=(0, 2), cold=frozenset({3})))
    passes = list(plan.passes())
    assert (passes[0].kind, passes[0].batch_indices, plan.total_batches) == (PassKind.WARMUP, (0, 2), 10)
    assert [p.cold_batches for p in passes[1:]] == [frozenset({3}), frozenset()]
    prefix = PassPlan(PassSchedule(), (1,) * 4, WarmupBatches(indices=(0, 1)))
    assert next(prefix.passes()).batch_indices is None and prefix.warmup == 2  # the loader's own order


def _record(batch: int, ms: float, cold: bool) -> StepRecord:
    return StepRecord("pipeline", "run", PassKind.TIMED, 0, batch, 1, 0, int(ms * 1e6), cold)


def test_cold_batches_stay_out_of_the_statistics_unless_nothing_warm_was_timed():
    records = [_record(0, 10.0, False), _record(1, 90.0, True), _record(2, 12.0, False)]
    assert [r.batch for r in timed_records(records)] == [0, 2]
    assert summarize_steps(records)[0]["max_ms"] == pytest.approx(12.0)
    only_cold = [_record(0, 90.0, True)]
    assert timed_records(only_cold) == only_cold


def test_warmup_key_refuses_other_values_with_the_key_named():
    config = ROOT / "configs" / "samples_tiny.yaml"
    assert load_config(config, ["benchmark.warmup=auto"]).benchmark.warmup == "auto"
    assert load_config(config, ["benchmark.warmup=3"]).benchmark.warmup == 3
    for bad in ("soon", "-1", "true", "0.5"):
        with pytest.raises(ConfigError, match="benchmark.warmup: must be auto"):
            load_config(config, [f"benchmark.warmup={bad}"])
    with pytest.raises(ConfigError, match="benchmark.warmup_max_batches"):
        load_config(config, ["benchmark.warmup_max_batches=0"])


@pytest.fixture(scope="module")
def three_shapes(tmp_path_factory):
    """Landscape, portrait, landscape, square: at 96 with rect, three input shapes, the square one last."""
    folder = tmp_path_factory.mktemp("shapes")
    photo = cv2.imread(str(SAMPLES / "dog.jpg"))
    for name, (w, h) in {"a": (160, 100), "b": (100, 160), "c": (160, 100), "d": (120, 120)}.items():
        cv2.imwrite(str(folder / f"{name}.jpg"), cv2.resize(photo, (w, h)))
    return folder


def _run(folder: Path, out: Path, run_id: str, *extra: str) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    code, run_dir = run_benchmark(QUICK + ["--set", f"dataset.path={folder}"], out, *extra, run_id=run_id)
    assert code == 0
    return (json.loads((run_dir / "summary.json").read_text()), pd.read_csv(run_dir / "steps_timer.csv"),
            pd.read_csv(run_dir / "steps_summary.csv"))


@pytest.mark.slow
def test_auto_warms_every_shape_so_no_timed_batch_is_cold(three_shapes, tmp_path):
    summary, steps, step_summary = _run(three_shapes, tmp_path, "auto", "benchmark.warmup=auto")
    warmup = summary["warmup"]
    assert (warmup["mode"], warmup["batches"], warmup["input_shapes"], warmup["cold_shapes"]) == (
        "auto", [0, 1, 3], 3, [])
    assert sorted(steps.loc[steps["pass_kind"] == "warmup", "batch"].unique()) == [0, 1, 3]
    assert not steps["cold_shape"].any()
    assert step_summary.set_index("step").loc["pipeline", "count"] == 8  # 4 batches x 2 timed passes


@pytest.mark.slow
def test_a_count_flags_cold_batches_and_reports_them_apart(three_shapes, tmp_path):
    summary, steps, step_summary = _run(three_shapes, tmp_path, "one", "benchmark.warmup=1")
    cold = steps[steps["cold_shape"]]
    assert set(cold["pass_index"]) == {0} and set(cold["pass_kind"]) == {"timed"}
    assert sorted(cold["batch"].unique()) == [1, 3]
    assert [c["batch"] for c in summary["warmup"]["cold_shapes"]] == [1, 3]
    assert all(c["pipeline_ms"] > 0 and c["forward_ms"] > 0 for c in summary["warmup"]["cold_shapes"])
    assert step_summary.set_index("step").loc["pipeline", "count"] == 6  # 8 timed batches less the 2 cold
    assert any("cold start" in warning for warning in summary["warnings"])


@pytest.mark.slow
def test_auto_covers_every_shape_on_an_exported_runtime_too(three_shapes, tmp_path):
    summary, steps, _ = _run(three_shapes, tmp_path, "ort", "benchmark.warmup=auto", "runtime.backend=onnxruntime",
                             f"runtime.cache_dir={tmp_path / 'cache'}", "benchmark.agreement.enabled=false")
    assert summary["runtime"]["backend"] == "onnxruntime"
    assert summary["warmup"]["warmed_shapes"] == 3 and not steps["cold_shape"].any()


@pytest.mark.slow
def test_under_loadgen_each_stream_warms_every_shape_its_batches_can_take(three_shapes, tmp_path):
    # Offline batches of 2 in LoadGen's order: a landscape and a portrait image together make a square batch
    # that no batch in dataset order has, and a worker may batch a single image. Both streams warm them all.
    summary, steps, _ = _run(three_shapes, tmp_path, "offline", "benchmark.warmup=auto", "dataset.batch_size=2",
                             "benchmark.scenario=offline", "benchmark.loadgen.min_duration_s=0.3",
                             "runtime.streams=2", "runtime.threads=2", "benchmark.agreement.enabled=false")
    warmup = summary["warmup"]
    # Dataset order: (a, b) and (c, d) are both 96 x 96. Any 1 or 2 of the images: 64 x 96, 96 x 64, 96 x 96.
    assert warmup["input_shapes"] == 1
    assert warmup["loadgen"]["batch_shapes"] == warmup["loadgen"]["warmed_shapes"] == 6
    assert all(entry["batches"] == warmup["loadgen"]["batches_per_stream"] == 1 + 5
               for entry in summary["scenario"]["streams_warmed"])
    assert warmup["cold_shapes"] == [] and not steps["cold_shape"].any()


@pytest.mark.slow
def test_under_loadgen_a_capped_warmup_lists_the_batches_that_ran_cold(three_shapes, tmp_path, capsys):
    summary, steps, _ = _run(three_shapes, tmp_path, "capped", "benchmark.warmup=auto", "dataset.batch_size=2",
                             "benchmark.warmup_max_batches=1", "benchmark.scenario=offline",
                             "benchmark.loadgen.min_duration_s=0.3", "benchmark.agreement.enabled=false")
    warmup = summary["warmup"]
    assert (warmup["loadgen"]["batch_shapes"], warmup["loadgen"]["warmed_shapes"]) == (6, 1)
    cold = steps[steps["cold_shape"] & (steps["step"] == "pipeline")]
    assert len(cold) >= 1
    # Every cold batch is listed with the shape it ran and its times, as the warning says.
    assert sorted(c["batch"] for c in warmup["cold_shapes"]) == sorted(cold["batch"])
    assert all(len(c["shape"]) == 4 and c["shape"] != [2, 3, 96, 96] and c["pipeline_ms"] > 0
               for c in warmup["cold_shapes"])
    assert any("cold start" in warning for warning in summary["warnings"])
    assert "covering 1 of 6 input shape(s) its batches can take (benchmark.warmup_max_batches 1)" in \
        capsys.readouterr().out
