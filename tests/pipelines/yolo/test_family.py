"""The YOLO family (pipelines/yolo/family.py): the pipeline it builds from the config's sections (pixels for a runtime
that converts them itself), and a network's cache key that follows its weights and seed."""
import torch

from types import SimpleNamespace

from pipelines.runtimes.base import PreparedForward
from pipelines.yolo import family as yolo_family
from tests.support.images import random_images


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
    pixels = yolo_family.build_pipeline(network, takes_pixels, preprocess, postprocess).preprocess(random_images())
    floats = pipeline.preprocess(random_images())
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
