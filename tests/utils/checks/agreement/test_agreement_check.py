"""The reference comparison on real pipelines: built to be equal, to be close and to differ; and which images the
agreement check of a built run hands it."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from datasets.image_folder import decode_image
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family as yolo
from datasets.image_folder import DatasetBatches, find_images
from tests.support.paths import SHAPES
from utils.assembly.composition import run_sections
from utils.checks.agreement import agreement_check
from utils.checks.agreement.agreement_check import compare_with_reference
from utils.config.schema import config_for
from utils.record.built_run import BuiltRun

slow = pytest.mark.slow  # real pipelines, one of them exported to OpenVINO

PRE = SimpleNamespace(img_size=96, rect=False, pad_value=114)
POST = SimpleNamespace(conf_thres=0.25, iou_thres=0.45, max_det=300, classes=None, agnostic=False)


@pytest.fixture(scope="module")
def reference():
    network = yolo.load_network("yolov7-tiny", None, seed=0)
    return yolo.build_pipeline(network, build_runtime("torch").prepare(network, yolo.example_input(PRE)), PRE, POST)


def batches():
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, (80 + 8 * i, 120, 3), dtype=np.uint8) for i in range(3)]
    return [images[:2], images[2:]]


def candidate_with(reference, change):
    forward = PreparedForward(lambda batch: change(reference.prepared(batch)), None)
    return yolo.build_pipeline(SimpleNamespace(module=reference.prepared.module,
                                               class_names=reference.class_names), forward, PRE, POST)


@slow
def test_the_same_network_is_equal(reference):
    result = compare_with_reference(candidate_with(reference, lambda out: out), reference, batches(), 50, 0.25,
                                    "torch fp32")
    assert result["verdict"] == "equal" and result["images"] == 3
    assert result["raw_output"]["max_abs"] == 0.0 and result["raw_output"]["candidates"] == 150
    assert result["reference_detections"] >= 50 and result["strict"]["recall"] == 1.0
    assert result["nms_conf_thres"] < 0.25  # random weights: the top-k threshold is what gives detections


@slow
def test_boxes_moved_a_few_pixels_are_close_not_equal(reference):
    def shift(out):
        moved = out.clone()
        moved[..., 0] += 3.0  # every box centre 3 px to the right
        return moved

    result = compare_with_reference(candidate_with(reference, shift), reference, batches(), 50, 0.25, "torch fp32")
    assert result["verdict"] == "close"
    assert result["raw_output"]["max_abs"] == pytest.approx(3.0, abs=1e-4)
    assert result["loose"]["recall"] > 0.9 and result["strict"]["recall"] < 0.99


@slow
def test_scrambled_classes_are_different(reference):
    def scramble(out):
        swapped = out.clone()
        swapped[..., 5:] = torch.flip(out[..., 5:], dims=[-1])
        return swapped

    result = compare_with_reference(candidate_with(reference, scramble), reference, batches(), 50, 0.25,
                                    "torch fp32")
    assert result["verdict"] == "different" and result["loose"]["recall"] < 0.5


TRAINED_PRE = SimpleNamespace(img_size=320, rect=False, pad_value=114)
# A deployment threshold low enough that these scenes show a few detections inside the letterbox padding:
# clipped to the image's edge they are lines of zero area, identical on both sides.
LOW_POST = SimpleNamespace(conf_thres=0.02, iou_thres=0.45, max_det=300, classes=None, agnostic=False)


@slow
def test_openvino_fp32_on_a_trained_model_is_equal_with_zero_area_boxes(tmp_path):
    weights = str(SHAPES / "yolov7-tiny-shapes.pt")
    network, own = (yolo.load_network("yolov7-tiny", weights, seed=0) for _ in range(2))
    example = yolo.example_input(TRAINED_PRE)
    reference = yolo.build_pipeline(own, build_runtime("torch").prepare(own, example), TRAINED_PRE, LOW_POST)
    candidate_forward = build_runtime("openvino", threads=1, cache_dir=tmp_path).prepare(network, example)
    candidate = yolo.build_pipeline(network, candidate_forward, TRAINED_PRE, LOW_POST)
    images = [decode_image(SHAPES / "images" / f"synth{n:04d}.jpg").image for n in (0, 15, 40)]
    result = compare_with_reference(candidate, reference, [[image] for image in images], 100, LOW_POST.conf_thres,
                                    "torch fp32")
    shown = result["at_configured_conf_thres"]
    flat = [d for d in reference.postprocess_at(reference.forward(reference.preprocess(images)),
                                                LOW_POST.conf_thres)
            for box in d.boxes if float((box[2:] - box[:2]).prod()) <= 0]
    assert flat, "the case needs zero-area detections above conf_thres"
    assert result["judged_at"] == "conf_thres" and shown["reference_detections"] >= 40
    assert shown["reference_detections"] == shown["candidate_detections"]
    assert shown["strict_recall"] == 1.0 and shown["strict_precision"] == 1.0
    assert result["raw_output"]["max_abs"] < 1e-2
    assert result["verdict"] == "equal"


@pytest.mark.parametrize("labelled, agreement, images", [
    (True, {}, [2, 2, 2, 2, 2]),  # with labels, the images the accuracy pass scored (10)
    (False, {}, [2, 2, 2, 2]),  # without, benchmark.agreement.images (8 by default)
    (True, {"images": 3}, [2, 1]),  # set by the user, it wins
])
def test_the_agreement_check_compares_the_scored_images_in_the_runs_batches(monkeypatch, labelled, agreement,
                                                                           images):
    compared = []

    def compare(candidate, reference, batches, top_k, conf_thres, reference_name):
        compared.append(([len(batch) for batch in batches], top_k, conf_thres, reference, reference_name))
        return {"verdict": "equal"}

    monkeypatch.setattr(agreement_check, "compare_with_reference", compare)
    config = config_for("yolov7-tiny", dataset={"path": str(SHAPES / "images"), "batch_size": 2},
                        benchmark={"agreement": agreement})
    paths = find_images(SHAPES / "images")
    built = BuiltRun(run_sections(config), None, None, None, None, SimpleNamespace(score_threshold=0.3),
                     DatasetBatches(paths[:12], 2), "labels" if labelled else None)
    reference = SimpleNamespace(backend="torch", name="torch fp32 eager",
                                pipeline=lambda postprocess: ("reference at", postprocess.conf_thres))
    said = []
    agreement_section, warnings = agreement_check.run_agreement_check(built, reference, {"images": 10}, said.append)
    assert compared == [(images, 100, 0.3, ("reference at", config.postprocess.conf_thres), "torch fp32 eager")]
    assert agreement_section == {"verdict": "equal"} and warnings == []
    assert said == [f"Checking detections against the torch fp32 reference on the first {sum(images)} scored images..."]
