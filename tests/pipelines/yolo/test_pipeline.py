"""The YOLO pipeline (pipelines/yolo/pipeline.py) on yolov7-tiny: a batch gives what its images give one at a time,
boxes clipped to each original image, its stages in order, and the agreement check's view of its output."""
import pytest
import torch

from pipelines.contract import Detections
from pipelines.yolo.pipeline import Forwarded, YoloPipeline
from pipelines.boxes.nms import NmsSettings, NonMaxSuppression
from pipelines.yolo.stages import Preprocess, ScaleBoxes
from tests.support.images import random_images


def detector(model, rect=False, conf=0.00002):
    return YoloPipeline(model, [str(i) for i in range(80)], Preprocess(128, rect, 114, 32),
                        NonMaxSuppression(NmsSettings(conf, 0.45)), ScaleBoxes())


def test_batched_run_equals_one_image_at_a_time(model):
    pipeline = detector(model)
    together = pipeline.forward(pipeline.preprocess(random_images()))
    for index, image in enumerate(random_images()):
        single = pipeline.forward(pipeline.preprocess([image]))
        assert torch.allclose(together.prediction[index], single.prediction[0], rtol=1e-4, atol=1e-3)
    detections = pipeline.to_original(pipeline.suppress(together))
    one_by_one = [pipeline.to_original(pipeline.suppress(
        Forwarded(pipeline.preprocess([image]), together.prediction[i:i + 1])))[0] for i, image in enumerate(random_images())]
    assert [len(d) for d in detections] == [len(d) for d in one_by_one]
    assert sum(len(d) for d in detections) > 0


def test_boxes_are_clipped_to_each_original_image(model):
    for found, image in zip(detector(model, rect=True)(random_images()), random_images()):
        height, width = image.shape[:2]
        assert isinstance(found, Detections) and len(found) > 0
        boxes = found.boxes
        assert (boxes[:, [0, 2]] >= 0).all() and (boxes[:, [0, 2]] <= width).all()
        assert (boxes[:, [1, 3]] >= 0).all() and (boxes[:, [1, 3]] <= height).all()
        assert found.labels.dtype == torch.int64 and found.scores.shape == (len(found),)
        assert found.masks is None


def test_stages_declare_their_order_and_groups(model):
    pipeline = detector(model)
    assert [(s.name, s.parent) for s in pipeline.stages()] == [
        ("preprocess", None), ("forward", None), ("nms", "postprocess"), ("scale_boxes", "postprocess")]
    assert pipeline.step_order() == ("preprocess", "forward", "postprocess", "nms", "scale_boxes")
    targets = pipeline.layer_timing_targets()
    assert targets.model is model.module
    assert targets.pre_transforms == (pipeline.preprocessor,)
    assert targets.post_transforms == (pipeline.nms, pipeline.scale_boxes)


def test_agreement_view_of_the_pipeline(model):
    pipeline = detector(model, conf=0.25)
    forwarded = pipeline.forward(pipeline.preprocess(random_images()))
    raw = pipeline.raw_output(forwarded)
    scores = pipeline.candidate_scores(raw)
    assert scores.shape == raw.shape[:2]
    row = raw[0, 7]
    assert scores[0, 7] == pytest.approx(float(row[4] * row[5:].max()))
    threshold = float(scores[0].topk(5).values[-1]) - 1e-9
    at_low = pipeline.postprocess_at(forwarded, threshold)
    assert len(at_low[0]) >= 1 and pipeline.nms.settings.conf_thres == 0.25  # the pipeline's own threshold is untouched
    assert [len(d) for d in pipeline.postprocess_at(forwarded, 0.25)] == [len(d) for d in pipeline.to_original(
        pipeline.suppress(forwarded))]
