"""The settings every family states under shared names (pipelines/settings.py): every architecture states each, one
declaration per key however many families read it, a key left out takes the architecture's own default (as
config.yaml then holds it), and what an architecture cannot take is refused."""
import pytest
import yaml

from pipelines import registry
from pipelines.settings import SHARED_POSTPROCESS, SHARED_PREPROCESS
from utils.config.schema import ConfigError, PostprocessSection, PreprocessSection, family_keys, load_config


def _example(facts) -> str:
    """An architecture the family builds, or a file name for the family whose network is a file."""
    return facts.ARCHS[0] if facts.ARCHS else f"detector{facts.ARCH_FILES[0]}"


CONFIG = "configs/samples_tiny.yaml"


def test_every_architecture_states_every_shared_setting():
    for facts in registry.FACTS:
        for arch in facts.ARCHS:
            defaults = facts.defaults(arch)
            assert set(SHARED_PREPROCESS) <= set(defaults.preprocess), arch
            assert set(SHARED_POSTPROCESS) <= set(defaults.postprocess), arch
            assert 0 <= defaults.evaluation.conf_thres <= defaults.postprocess["conf_thres"], arch
            assert defaults.evaluation.source


def test_a_key_two_families_read_is_one_shared_declaration():
    for part in ("Preprocess", "Postprocess"):
        owners: dict[str, object] = {}
        for facts in registry.FACTS:
            model = getattr(facts, part)
            for key in model.model_fields:
                # Pydantic copies a field into each model that inherits it: one declaration is one declaring class.
                declared = next(c for c in model.__mro__ if key in getattr(c, "__annotations__", {}))
                assert owners.setdefault(key, declared) is declared, f"{part}.{key} is declared twice"
    section_keys = list(PreprocessSection.model_fields)
    assert section_keys[:len(SHARED_PREPROCESS)] == list(SHARED_PREPROCESS)
    assert list(PostprocessSection.model_fields)[:len(SHARED_POSTPROCESS)] == list(SHARED_POSTPROCESS)
    for facts in registry.FACTS:
        assert set(facts.SIZE_KEYS) <= set(family_keys(_example(facts), "preprocess"))
        assert family_keys(_example(facts), "preprocess") == (*SHARED_PREPROCESS, *facts.Preprocess.model_fields)


@pytest.mark.parametrize("arch, img_size, conf, accuracy_conf", [
    ("yolov7-tiny", 640, 0.25, 0.001), ("fasterrcnn_resnet50_fpn", 800, 0.5, 0.05),
    ("retinanet_resnet50_fpn", 800, 0.5, 0.05), ("fcos_resnet50_fpn", 800, 0.5, 0.2),
    ("ssd300_vgg16", 300, 0.5, 0.01), ("ssdlite320_mobilenet_v3_large", 320, 0.5, 0.001)])
def test_a_shared_key_left_out_takes_the_architectures_default(arch, img_size, conf, accuracy_conf):
    config = load_config(CONFIG, [f"model.arch={arch}", "preprocess.img_size=null"])
    assert config.preprocess.img_size == img_size and config.postprocess.conf_thres == conf
    assert config.benchmark.accuracy.conf_thres == accuracy_conf
    assert config.runtime.calibration.keep_float == list(registry.facts_for(arch).defaults(arch).keep_float)
    given = load_config(CONFIG, [f"model.arch={arch}", "preprocess.img_size=288", "postprocess.conf_thres=0.3",
                                 "benchmark.accuracy.conf_thres=0.02"])
    assert (given.preprocess.img_size, given.postprocess.conf_thres, given.benchmark.accuracy.conf_thres) == (
        288, 0.3, 0.02)


def test_the_resolved_defaults_are_what_config_yaml_holds():
    data = yaml.safe_load(yaml.safe_dump(load_config(CONFIG, ["model.arch=ssdlite320_mobilenet_v3_large",
                                                              "preprocess.img_size=null"]).family_sections()))
    assert data["preprocess"] == {"img_size": 320, "mean": [0.5] * 3, "std": [0.5] * 3, "max_size": 320}
    assert data["postprocess"] == {"conf_thres": 0.5, "iou_thres": 0.55, "max_det": 300, "topk_candidates": 300}


def test_an_architecture_refuses_what_it_cannot_take():
    with pytest.raises(ConfigError, match="preprocess.mean does not apply to model.arch yolov7-tiny"):
        load_config(CONFIG, ["preprocess.mean=[0.5, 0.5, 0.5]"])
    with pytest.raises(ConfigError, match="at least 268"):
        load_config(CONFIG, ["model.arch=ssd300_vgg16", "preprocess.img_size=160"])
    with pytest.raises(ConfigError, match="preprocess.max_size does not apply"):
        load_config(CONFIG, ["model.arch=ssdlite320_mobilenet_v3_large", "preprocess.img_size=null",
                             "preprocess.max_size=640"])
    with pytest.raises(ConfigError, match="benchmark.accuracy.multi_label does not apply"):
        load_config(CONFIG, ["model.arch=retinanet_resnet50_fpn", "benchmark.accuracy.multi_label=false"])
    with pytest.raises(ConfigError, match="preprocess.rect belongs to the yolo family"):
        load_config(CONFIG, ["model.arch=retinanet_resnet50_fpn", "preprocess.rect=true"])
    with pytest.raises(ConfigError, match="preprocess.max_size belongs to the rcnn and dense families"):
        load_config(CONFIG, ["preprocess.max_size=640"])
