"""What the YOLO family states about itself (pipelines/yolo/facts.py): its architectures are the built-in definitions,
and the config's stride check asks it."""
import pytest

from pipelines.yolo import facts as yolo_facts
from tests.support.paths import TINY_CONFIG as CONFIG
from utils.config.schema import ConfigError, load_config


def test_the_builtin_yolo_definitions_are_the_facts():
    from models.yolo import BUILTIN_ARCHS
    assert yolo_facts.ARCHS == BUILTIN_ARCHS


def test_the_stride_check_asks_the_family():
    with pytest.raises(ConfigError, match=f"must be a multiple of {yolo_facts.STRIDE}"):
        load_config(CONFIG, [f"preprocess.img_size={yolo_facts.STRIDE * 4 + 1}"])
    assert load_config(CONFIG, ["model.arch=fcos_resnet50_fpn", "preprocess.img_size=129"]).preprocess.img_size == 129
