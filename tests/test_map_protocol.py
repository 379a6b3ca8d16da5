"""The accuracy pass follows YOLOv7's test.py: multi-label NMS at conf 0.001 / IoU 0.65 unless the config
says otherwise, while the deployed pipeline keeps one class per box."""
from __future__ import annotations

import pytest
import torch

from pipelines.runtimes.base import PreparedForward
from pipelines.yolo import family as yolo
from utils.config import AccuracySection, PostprocessSection, PreprocessSection
from utils.harness.accuracy_pass import map_postprocess

# One box whose objectness 0.9 times class probabilities 0.5 (class 1) and 0.4 (class 3) clears 0.001 twice.
PREDICTION = torch.zeros(1, 1, 5 + 80)
PREDICTION[0, 0, :5] = torch.tensor([50.0, 50.0, 20.0, 20.0, 0.9])
PREDICTION[0, 0, 5 + 1], PREDICTION[0, 0, 5 + 3] = 0.5, 0.4


def _suppressed(postprocess) -> torch.Tensor:
    network = yolo.load_network("yolov7-tiny", None, seed=0)
    pipeline = yolo.build_pipeline(network, PreparedForward(lambda batch: PREDICTION, None),
                                   PreprocessSection(img_size=128), postprocess)
    return pipeline.nms(PREDICTION)[0]


def test_the_accuracy_pass_keeps_every_class_of_a_box_by_default():
    accuracy = AccuracySection()
    assert accuracy.multi_label is True
    postprocess, stated = map_postprocess("yolo", PostprocessSection(), accuracy)
    assert stated == {"conf_thres": 0.001, "iou_thres": 0.65, "max_det": 300, "multi_label": True}
    kept = _suppressed(postprocess)
    assert kept[:, 5].tolist() == [1.0, 3.0]
    assert kept[:, 4].tolist() == pytest.approx([0.9 * 0.5, 0.9 * 0.4], abs=1e-6)


def test_single_label_when_asked_and_in_the_deployed_pipeline():
    postprocess, stated = map_postprocess("yolo", PostprocessSection(), AccuracySection(multi_label=False))
    assert stated["multi_label"] is False
    assert _suppressed(postprocess)[:, 5].tolist() == [1.0]
    assert PostprocessSection().multi_label is False
    assert _suppressed(PostprocessSection(conf_thres=0.001))[:, 5].tolist() == [1.0]
