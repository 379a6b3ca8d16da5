"""The reference comparison on real pipelines: built to be equal, to be close and to differ."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from datasets.image_folder import decode_image
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family as yolo
from tests.support.paths import SHAPES
from utils.checks.agreement.agreement_check import compare_with_reference

pytestmark = pytest.mark.slow  # real pipelines, one of them exported to OpenVINO

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


def test_the_same_network_is_equal(reference):
    result = compare_with_reference(candidate_with(reference, lambda out: out), reference, batches(), 50, 0.25,
                                    "torch fp32")
    assert result["verdict"] == "equal" and result["images"] == 3
    assert result["raw_output"]["max_abs"] == 0.0 and result["raw_output"]["candidates"] == 150
    assert result["reference_detections"] >= 50 and result["strict"]["recall"] == 1.0
    assert result["nms_conf_thres"] < 0.25  # random weights: the top-k threshold is what gives detections


def test_boxes_moved_a_few_pixels_are_close_not_equal(reference):
    def shift(out):
        moved = out.clone()
        moved[..., 0] += 3.0  # every box centre 3 px to the right
        return moved

    result = compare_with_reference(candidate_with(reference, shift), reference, batches(), 50, 0.25, "torch fp32")
    assert result["verdict"] == "close"
    assert result["raw_output"]["max_abs"] == pytest.approx(3.0, abs=1e-4)
    assert result["loose"]["recall"] > 0.9 and result["strict"]["recall"] < 0.99


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
