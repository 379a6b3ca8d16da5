"""The accuracy pass follows YOLOv7's test.py: multi-label NMS at conf 0.001 / IoU 0.65 and test.py's letterbox
unless the config says otherwise, while the deployed pipeline keeps one class per box and its own letterbox."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipelines.runtimes.base import PreparedForward
from pipelines.yolo import family as yolo
from utils.config.schema import config_for
from utils.checks.accuracy.accuracy_pass import map_postprocess

YOLO = config_for("yolov7-tiny")

# One box whose objectness 0.9 times class probabilities 0.5 (class 1) and 0.4 (class 3) clears 0.001 twice.
PREDICTION = torch.zeros(1, 1, 5 + 80)
PREDICTION[0, 0, :5] = torch.tensor([50.0, 50.0, 20.0, 20.0, 0.9])
PREDICTION[0, 0, 5 + 1], PREDICTION[0, 0, 5 + 3] = 0.5, 0.4


def _suppressed(postprocess) -> torch.Tensor:
    network = yolo.load_network("yolov7-tiny", None, seed=0)
    pipeline = yolo.build_pipeline(network, PreparedForward(lambda batch: PREDICTION, None),
                                   config_for("yolov7-tiny", preprocess={"img_size": 128}).preprocess, postprocess)
    return pipeline.nms(PREDICTION)[0]


@pytest.mark.slow
def test_the_accuracy_pass_keeps_every_class_of_a_box_by_default():
    accuracy = YOLO.benchmark.accuracy
    assert accuracy.multi_label is True
    postprocess, stated = map_postprocess(YOLO.postprocess, accuracy, "YOLOv7's test.py")
    assert stated == {"conf_thres": 0.001, "iou_thres": 0.65, "max_det": 300, "multi_label": True,
                      "protocol": "YOLOv7's test.py", "preprocess": "official"}
    kept = _suppressed(postprocess)
    assert kept[:, 5].tolist() == [1.0, 3.0]
    assert kept[:, 4].tolist() == pytest.approx([0.9 * 0.5, 0.9 * 0.4], abs=1e-6)


@pytest.mark.slow
def test_single_label_when_asked_and_in_the_deployed_pipeline():
    single = config_for("yolov7-tiny", benchmark={"accuracy": {"multi_label": False}})
    postprocess, stated = map_postprocess(single.postprocess, single.benchmark.accuracy, "")
    assert stated["multi_label"] is False
    assert _suppressed(postprocess)[:, 5].tolist() == [1.0]
    assert YOLO.postprocess.multi_label is False
    assert _suppressed(YOLO.postprocess.model_copy(update={"conf_thres": 0.001}))[:, 5].tolist() == [1.0]


def test_a_torchvision_detector_is_evaluated_at_its_builders_own_cut():
    config = config_for("retinanet_resnet50_fpn")
    postprocess, stated = map_postprocess(config.postprocess, config.benchmark.accuracy, "torchvision's")
    assert (postprocess.conf_thres, postprocess.iou_thres, postprocess.max_det) == (0.05, 0.5, 300)
    assert "multi_label" not in stated and stated["conf_thres"] == 0.05
    assert config.postprocess.conf_thres == 0.5  # the deployed cut stays the run's own


@pytest.mark.slow
def test_the_official_letterbox_centres_each_batch_in_its_rectangle_and_maps_boxes_back():
    # Two landscape images (300x400 and 240x320, both 3:4) at img_size 320: each becomes 240x320, centred in
    # test.py's 256x352 (ceil(0.75 * 10 + 0.5) = 8 and ceil(10 + 0.5) = 11 strides): 8 px above and below,
    # 16 px left and right. The deployed letterbox makes 320x320 squares of them.
    network = yolo.load_network("yolov7-tiny", None, seed=0)
    seen = []
    # A box centred at (176, 128) of the letterboxed input, 32 x 16 px: (160, 120)-(192, 136) there.
    prediction = torch.zeros(2, 1, 5 + 80)
    prediction[:, 0, :5] = torch.tensor([176.0, 128.0, 32.0, 16.0, 0.9])
    prediction[:, 0, 5] = 1.0
    forward = PreparedForward(lambda batch: seen.append(batch.shape) or prediction, None)
    postprocess, _ = map_postprocess(YOLO.postprocess, YOLO.benchmark.accuracy, "")
    images = [np.zeros((300, 400, 3), np.uint8), np.zeros((240, 320, 3), np.uint8)]
    official = yolo.build_pipeline(network, forward, config_for("yolov7-tiny", preprocess={"img_size": 320}).preprocess, postprocess, evaluation=True)
    found = official(images)
    assert seen[-1] == (2, 3, 256, 352) and official.input_shape([(300, 400), (240, 320)]) == (2, 3, 256, 352)
    # Back in each image: minus the padding (16, 8), over the height's gain (240 / 300 and 1).
    assert found[0].boxes[0].tolist() == pytest.approx([144 / 0.8, 112 / 0.8, 176 / 0.8, 128 / 0.8])
    assert found[1].boxes[0].tolist() == pytest.approx([144.0, 112.0, 176.0, 128.0])
    deployed = yolo.build_pipeline(network, forward, config_for("yolov7-tiny", preprocess={"img_size": 320}).preprocess, postprocess)
    deployed(images)
    assert seen[-1] == (2, 3, 320, 320)
    # A portrait image beside them makes the batch's rectangle a square of 352.
    assert official.input_shape([(300, 400), (400, 300)]) == (2, 3, 352, 352)
