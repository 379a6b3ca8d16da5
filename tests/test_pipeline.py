import numpy as np
import pytest
import torch

from models import build_model, fuse_model
from pipelines.yolo_object_detector import NonMaxSuppression, Preprocess, ScaleBoxes, YoloObjectDetector
from utils.letterbox import letterbox


@pytest.fixture(scope="module")
def model():
    return fuse_model(build_model("yolov7-tiny", seed=3))


def images():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (90, 160, 3), dtype=np.uint8), rng.integers(0, 255, (200, 100, 3), dtype=np.uint8)]


def detector(model, rect=False, conf=0.00002):
    return YoloObjectDetector(model, Preprocess(128, rect, 114, 32), NonMaxSuppression(conf, 0.45, 300, None, False),
                              ScaleBoxes())


def test_square_preprocess_is_rgb_chw_unit_range():
    image = np.zeros((64, 128, 3), np.uint8)
    image[..., 0] = 255  # pure blue in BGR
    batch = Preprocess(128, False, 114, 32)([image])
    assert batch.tensor.shape == (1, 3, 128, 128) and batch.tensor.dtype == torch.float32
    content = batch.tensor[0, :, 64, 64]
    assert content.tolist() == [0.0, 0.0, 1.0]
    assert torch.allclose(batch.tensor[0, :, 0, 0], torch.full((3,), 114 / 255))
    assert batch.original_shapes == [(64, 128)]


def test_rect_batch_pads_each_minimal_rectangle_at_bottom_right():
    batch = Preprocess(128, True, 114, 32)(images())
    first, _ = letterbox(images()[0], 128, auto=True, stride=32)
    second, _ = letterbox(images()[1], 128, auto=True, stride=32)
    assert first.shape[:2] == (96, 128) and second.shape[:2] == (128, 64)
    assert batch.tensor.shape == (2, 3, 128, 128)
    expected = torch.from_numpy(np.ascontiguousarray(second[..., ::-1].transpose(2, 0, 1))).float() / 255
    assert torch.equal(batch.tensor[1, :, :128, :64], expected)
    assert torch.all(batch.tensor[1, :, :, 64:] == 114 / 255)


def test_batched_run_equals_one_image_at_a_time(model):
    pipeline = detector(model)
    batch = pipeline.preprocess(images())
    together = pipeline.forward(batch)
    for index, image in enumerate(images()):
        single = pipeline.forward(pipeline.preprocess([image]))
        assert torch.allclose(together[index], single[0], rtol=1e-4, atol=1e-3)
    detections = pipeline.postprocess(together, batch)
    assert [len(d) for d in detections] == [len(pipeline.postprocess(together[i:i + 1], pipeline.preprocess([im]))[0])
                                            for i, im in enumerate(images())]
    assert sum(len(d) for d in detections) > 0


def test_boxes_are_clipped_to_each_original_image(model):
    for det, image in zip(detector(model, rect=True)(images()), images()):
        height, width = image.shape[:2]
        assert len(det) > 0
        assert (det[:, [0, 2]] >= 0).all() and (det[:, [0, 2]] <= width).all()
        assert (det[:, [1, 3]] >= 0).all() and (det[:, [1, 3]] <= height).all()
