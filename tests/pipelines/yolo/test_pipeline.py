import numpy as np
import pytest
import torch

from types import SimpleNamespace

from pipelines.contract import Detections
from pipelines.registry import UnknownArchitecture, family_for
from pipelines.runtimes.base import PreparedForward
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family as yolo_family
from pipelines.boxes.letterbox import letterbox
from pipelines.yolo.pipeline import Forwarded, YoloPipeline
from pipelines.boxes.nms import NmsSettings, NonMaxSuppression
from pipelines.yolo.stages import Preprocess, ScaleBoxes


@pytest.fixture(scope="module")
def network():
    return yolo_family.load_network("yolov7-tiny", None, seed=3)


@pytest.fixture(scope="module")
def model(network):
    return build_runtime("torch", fuse=True).prepare(network, torch.zeros(1, 3, 128, 128))


def images():
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (90, 160, 3), dtype=np.uint8), rng.integers(0, 255, (200, 100, 3), dtype=np.uint8)]


def detector(model, rect=False, conf=0.00002):
    return YoloPipeline(model, [str(i) for i in range(80)], Preprocess(128, rect, 114, 32),
                        NonMaxSuppression(NmsSettings(conf, 0.45)), ScaleBoxes())


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


def _reference_pixels(canvases, pad_value):
    """The layout spelled out in numpy: pad into a uint8 batch, BGR to RGB, HWC to CHW."""
    height, width = max(c.shape[0] for c in canvases), max(c.shape[1] for c in canvases)
    batch = np.full((len(canvases), height, width, 3), pad_value, dtype=np.uint8)
    for slot, canvas in zip(batch, canvases):
        slot[:canvas.shape[0], :canvas.shape[1]] = canvas
    return torch.from_numpy(np.ascontiguousarray(batch[..., ::-1].transpose(0, 3, 1, 2)))


def _reference_tensor(canvases, pad_value):
    """Then float, / 255."""
    return _reference_pixels(canvases, pad_value).float().div_(255.0)


@pytest.mark.parametrize("rect, evaluation", [(False, False), (True, False), (False, True)])
def test_conversion_is_bit_for_bit_the_reference_for_every_byte_value_and_padding(rect, evaluation):
    rng = np.random.default_rng(1)
    every_byte = np.stack([np.roll(np.arange(256, dtype=np.uint8), shift) for shift in (0, 85, 170)], axis=-1)
    first = np.tile(every_byte[None], (90, 1, 1))[:, :160]  # each channel takes every value 0-255
    second = rng.integers(0, 256, (200, 100, 3), dtype=np.uint8)
    preprocess = Preprocess(128, rect, 114, 32, evaluation=evaluation)
    batch = preprocess([first, second])
    if evaluation:
        from pipelines.boxes.letterbox import evaluation_letterbox, evaluation_shape
        shape = evaluation_shape([first.shape[:2], second.shape[:2]], 128, 32)
        canvases = [evaluation_letterbox(image, 128, shape, (114,) * 3)[0] for image in (first, second)]
    else:
        canvases = [letterbox(image, 128, color=(114,) * 3, auto=rect, stride=32)[0] for image in (first, second)]
    assert torch.equal(batch.tensor, _reference_tensor(canvases, 114))
    # For a runtime that converts inside its own graph: the same layout, the bytes themselves.
    pixels = Preprocess(128, rect, 114, 32, evaluation=evaluation, pixels=True)([first, second])
    assert pixels.tensor.dtype == torch.uint8 and torch.equal(pixels.tensor, _reference_pixels(canvases, 114))
    assert pixels.geometries == batch.geometries and pixels.original_shapes == batch.original_shapes
    unpadded = Preprocess(256, False, 114, 32)([np.tile(every_byte[None], (256, 1, 1))])
    assert torch.equal(unpadded.tensor, _reference_tensor([np.tile(every_byte[None], (256, 1, 1))], 114))


def test_batched_run_equals_one_image_at_a_time(model):
    pipeline = detector(model)
    together = pipeline.forward(pipeline.preprocess(images()))
    for index, image in enumerate(images()):
        single = pipeline.forward(pipeline.preprocess([image]))
        assert torch.allclose(together.prediction[index], single.prediction[0], rtol=1e-4, atol=1e-3)
    detections = pipeline.to_original(pipeline.suppress(together))
    one_by_one = [pipeline.to_original(pipeline.suppress(
        Forwarded(pipeline.preprocess([image]), together.prediction[i:i + 1])))[0] for i, image in enumerate(images())]
    assert [len(d) for d in detections] == [len(d) for d in one_by_one]
    assert sum(len(d) for d in detections) > 0


def test_boxes_are_clipped_to_each_original_image(model):
    for found, image in zip(detector(model, rect=True)(images()), images()):
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


def test_registry_picks_the_family_and_names_the_choices():
    assert family_for("yolov7") is yolo_family and family_for("my/yolo.yaml") is yolo_family
    with pytest.raises(UnknownArchitecture, match="yolov7-tiny"):
        family_for("resnet50")


def test_family_builds_its_pipeline_from_the_config_sections(network, model):
    preprocess = SimpleNamespace(img_size=96, rect=True, pad_value=0)
    postprocess = SimpleNamespace(conf_thres=0.5, iou_thres=0.4, max_det=7, classes=[1], agnostic=True)
    pipeline = yolo_family.build_pipeline(network, model, preprocess, postprocess)
    assert (pipeline.preprocessor.img_size, pipeline.preprocessor.stride) == (96, 32)
    assert (pipeline.nms.settings.max_det, pipeline.nms.settings.classes, pipeline.nms.settings.agnostic) == (7, [1], True)
    assert pipeline.class_names == network.class_names and len(pipeline.class_names) == 80
    assert not pipeline.preprocessor.pixels and network.pixel_scale == 255.0
    # A runtime that takes the pixels themselves gets them: the preprocessing stops before converting.
    takes_pixels = PreparedForward(model.run, None, torch.uint8)
    pixels = yolo_family.build_pipeline(network, takes_pixels, preprocess, postprocess).preprocess(images())
    floats = pipeline.preprocess(images())
    assert pixels.tensor.dtype == torch.uint8 and torch.equal(pixels.tensor.float().div_(255.0), floats.tensor)


def test_cache_key_follows_weights_and_seed(tmp_path):
    first, again = (yolo_family.load_network("yolov7-tiny", None, seed=s) for s in (0, 0))
    other = yolo_family.load_network("yolov7-tiny", None, seed=1)
    assert first.cache_key == again.cache_key != other.cache_key
    weights = tmp_path / "w.pt"
    torch.save(first.module.state_dict(), weights)
    loaded = yolo_family.load_network("yolov7-tiny", str(weights), seed=0)
    assert "weights-" in loaded.cache_key and loaded.cache_key != first.cache_key
    assert yolo_family.example_input(SimpleNamespace(img_size=96)).shape == (1, 3, 96, 96)


def test_agreement_view_of_the_pipeline(model):
    pipeline = detector(model, conf=0.25)
    forwarded = pipeline.forward(pipeline.preprocess(images()))
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
