"""Each detector family states its own facts (facts.py), and the config asks them: the architectures it
accepts, its preprocess and postprocess keys with their defaults, its stride, and its runtimes."""
import pytest

from pipelines import registry
from pipelines.rcnn import facts as rcnn_facts
from pipelines.yolo import facts as yolo_facts
from utils.config import ConfigError, PostprocessSection, PreprocessSection, family_keys, load_config

CONFIG = "configs/samples_tiny.yaml"


def test_the_builtin_yolo_definitions_are_the_facts():
    from models.yolo import BUILTIN_ARCHS
    assert yolo_facts.ARCHS == BUILTIN_ARCHS


def test_the_rcnn_builders_are_the_facts():
    from torchvision.models import detection
    assert all(callable(getattr(detection, arch)) for arch in rcnn_facts.ARCHS)


def test_a_family_module_is_its_facts_plus_how_it_builds():
    for facts in registry.FACTS:
        family = registry.family_for(facts.ARCHS[0])
        assert family.NAME == facts.NAME and family.ARCHS == facts.ARCHS and family.SIZE_KEYS == facts.SIZE_KEYS


def test_every_key_belongs_to_one_family_and_the_sections_hold_them_all():
    pre = [key for facts in registry.FACTS for key in facts.Preprocess.model_fields]
    post = [key for facts in registry.FACTS for key in facts.Postprocess.model_fields]
    assert len(set(pre)) == len(pre) and len(set(post)) == len(post)
    assert list(PreprocessSection.model_fields) == pre and list(PostprocessSection.model_fields) == post
    for facts in registry.FACTS:
        assert set(facts.SIZE_KEYS) <= set(facts.Preprocess.model_fields)
        assert family_keys(facts.ARCHS[0], "preprocess") == tuple(facts.Preprocess.model_fields)


def test_defaults_come_from_the_families():
    assert PreprocessSection().img_size == yolo_facts.Preprocess().img_size == 640
    assert PreprocessSection().min_size == rcnn_facts.Preprocess().min_size == 800


def test_the_stride_check_asks_the_family():
    with pytest.raises(ConfigError, match=f"must be a multiple of {yolo_facts.STRIDE}"):
        load_config(CONFIG, [f"preprocess.img_size={yolo_facts.STRIDE * 4 + 1}"])


def test_unknown_arch_names_every_family():
    with pytest.raises(ConfigError) as error:
        load_config(CONFIG, ["model.arch=resnet"])
    for facts in registry.FACTS:
        assert all(arch in str(error.value) for arch in facts.ARCHS)
    with pytest.raises(registry.UnknownArchitecture, match="model-definition .yaml"):
        registry.facts_for("resnet")


def test_rcnn_refuses_a_runtime_without_its_modules():
    runtime = load_config(CONFIG, ["runtime.backend=onnxruntime"]).runtime
    message = rcnn_facts.unsupported_runtime(runtime)
    assert "runtime.backend onnxruntime is not supported" in message
    assert message.endswith("use runtime.backend torch (precision fp32 or bf16)")
    assert rcnn_facts.unsupported_runtime(load_config(CONFIG).runtime) is None
    assert "runtime.compile" in rcnn_facts.unsupported_runtime(load_config(CONFIG, ["runtime.compile=true"]).runtime)
