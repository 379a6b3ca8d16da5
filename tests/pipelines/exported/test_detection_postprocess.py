"""TFLite_Detection_PostProcess's work done here (pipelines/exported/detection_postprocess.py), for a runtime without
the operator: the centre-size decode and both NMS on hand-computed cases, and equal to LiteRT's own kernel on a
file of random encodings and scores."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from ai_edge_litert.interpreter import Interpreter

from pipelines.exported.detection_postprocess import PostprocessOptions, decode_centre_size, postprocess
from tests.support.tflite_models import ssd_file

OPTIONS = PostprocessOptions(max_detections=10, num_classes=3, nms_iou_threshold=0.6)


def test_an_encoding_decodes_against_its_anchor_with_the_ssd_scales():
    anchors = torch.tensor([[0.25, 0.25, 0.5, 0.5]])
    boxes = decode_centre_size(torch.tensor([[1.0, -1.0, 0.5, 0.0]]), anchors, OPTIONS)
    # centre (0.25 + 0.1 x 0.5, 0.25 - 0.1 x 0.5); half height 0.5 x exp(0.1) x 0.5, half width 0.25
    half = 0.25 * float(np.exp(0.1))
    assert boxes[0].tolist() == pytest.approx([0.3 - half, -0.05, 0.3 + half, 0.45], abs=1e-6)


def test_the_fast_nms_keeps_each_anchors_best_class_and_drops_overlaps_across_classes():
    boxes = torch.tensor([[0.0, 0.0, 0.5, 0.5], [0.0, 0.05, 0.5, 0.55], [0.5, 0.5, 1.0, 1.0]])
    scores = torch.tensor([[0.1, 0.9, 0.2, 0.0], [0.1, 0.0, 0.0, 0.8], [0.0, 0.3, 0.6, 0.1]])
    kept_boxes, labels, values = postprocess(boxes, scores, OPTIONS)
    # anchor 1 (class 2, 0.8) overlaps anchor 0 (IoU 0.9 / 1.1 > 0.6) though its class differs
    assert labels.tolist() == [0, 1] and values.tolist() == pytest.approx([0.9, 0.6])
    assert kept_boxes.tolist() == [[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0]]


def test_the_regular_nms_runs_class_by_class_then_keeps_the_best():
    boxes = torch.tensor([[0.0, 0.0, 0.5, 0.5], [0.0, 0.05, 0.5, 0.55], [0.5, 0.5, 1.0, 1.0]])
    scores = torch.tensor([[0.1, 0.9, 0.2, 0.0], [0.1, 0.0, 0.0, 0.8], [0.0, 0.3, 0.6, 0.1]])
    options = PostprocessOptions(max_detections=3, num_classes=3, use_regular_nms=True, nms_iou_threshold=0.6,
                                 nms_score_threshold=0.25)
    kept_boxes, labels, values = postprocess(boxes, scores, options)
    assert labels.tolist() == [0, 2, 1] and values.tolist() == pytest.approx([0.9, 0.8, 0.6])


def test_candidates_below_the_operators_score_threshold_never_enter():
    boxes = torch.tensor([[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0]])
    scores = torch.tensor([[0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 0.2, 0.0]])
    _, labels, values = postprocess(boxes, scores, PostprocessOptions(max_detections=10, num_classes=3,
                                                                      nms_score_threshold=0.3))
    assert labels.tolist() == [0] and values.tolist() == [0.5]


@pytest.mark.parametrize("regular", [False, True])
def test_equal_to_litert_kernel_on_random_encodings_and_scores(tmp_path, regular):
    generator = np.random.default_rng(7)
    count, classes = 60, 4
    centres = generator.uniform(0.1, 0.9, (count, 2))
    anchors = np.concatenate([centres, generator.uniform(0.05, 0.4, (count, 2))], axis=1).astype(np.float32)
    encodings = generator.normal(0, 1, (count, 4)).astype(np.float32)
    logits = generator.normal(-1, 2, (count, classes + 1)).astype(np.float32)
    file = ssd_file(tmp_path / "ssd.tflite", encodings, logits, anchors, (1, 8, 8, 3), "float32", None,
                    max_detections=12, score_threshold=0.05, iou_threshold=0.5, regular=regular,
                    detections_per_class=5)
    interpreter = Interpreter(model_path=str(file))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], np.zeros((1, 8, 8, 3), np.float32))
    interpreter.invoke()
    boxes, labels, scores, found = (interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details())
    options = PostprocessOptions(max_detections=12, num_classes=classes, use_regular_nms=regular,
                                 nms_score_threshold=0.05, nms_iou_threshold=0.5, detections_per_class=5)
    decoded = decode_centre_size(torch.from_numpy(encodings), torch.from_numpy(anchors), options)
    ours_boxes, ours_labels, ours_scores = postprocess(decoded, torch.sigmoid(torch.from_numpy(logits)), options)
    kept = int(found[0])
    assert kept == len(ours_scores) > 3
    assert ours_labels.tolist() == labels[0, :kept].astype(int).tolist()
    np.testing.assert_allclose(ours_scores.numpy(), scores[0, :kept], rtol=1e-6)
    np.testing.assert_allclose(ours_boxes.numpy(), boxes[0, :kept], atol=1e-6)
