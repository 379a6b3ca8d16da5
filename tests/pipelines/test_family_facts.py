"""Each detector family states its own facts (facts.py), and the config asks them: the architectures it
accepts, its defaults under the shared names, its own keys, its stride, how its forward is timed, and the
runtimes it refuses. No code under utils/ names a family."""
import ast

import pytest
import torch
import yaml

from pipelines import registry
from pipelines.dense import facts as dense_facts
from pipelines.rcnn import facts as rcnn_facts
from pipelines.settings import SHARED_POSTPROCESS, SHARED_PREPROCESS, ForwardTiming
from pipelines.yolo import facts as yolo_facts
from utils.config.schema import ConfigError, PostprocessSection, PreprocessSection, family_keys, load_config
from utils.storage.finished_run import FinishedRun
from tests.support.paths import ROOT

CONFIG = "configs/samples_tiny.yaml"


def test_the_builtin_yolo_definitions_are_the_facts():
    from models.yolo import BUILTIN_ARCHS
    assert yolo_facts.ARCHS == BUILTIN_ARCHS


@pytest.mark.parametrize("facts", [rcnn_facts, dense_facts], ids=lambda f: f.NAME)
def test_each_torchvision_row_is_its_builders_own_defaults(facts):
    from torchvision.models import detection
    for arch, builder in facts.BUILDERS.items():
        with torch.device("meta"):  # the builder's settings without a second of weight initialisation
            model = getattr(detection, arch)(weights=None, weights_backbone=None)
        heads = getattr(model, "roi_heads", model)
        transform = model.transform
        assert (builder.score_thresh, builder.nms_thresh, builder.detections_per_img) == (
            heads.score_thresh, heads.nms_thresh, heads.detections_per_img), arch
        assert (builder.min_size, builder.max_size, builder.size_divisible) == (
            transform.min_size[-1], transform.max_size, transform.size_divisible), arch
        assert list(builder.mean) == transform.image_mean and list(builder.std) == pytest.approx(transform.image_std)
        assert builder.fixed_size == (transform.fixed_size is not None), arch
        assert builder.topk_candidates == getattr(model, "topk_candidates", None), arch


def _example(facts) -> str:
    """An architecture the family builds, or a file name for the family whose network is a file."""
    return facts.ARCHS[0] if facts.ARCHS else f"detector{facts.ARCH_FILES[0]}"


def test_a_family_module_is_its_facts_plus_how_it_builds():
    for facts in registry.FACTS:
        family = registry.family_for(_example(facts))
        assert family.NAME == facts.NAME and family.ARCHS == facts.ARCHS and family.SIZE_KEYS == facts.SIZE_KEYS
        assert family.FORWARD_TIMING == facts.FORWARD_TIMING and family.defaults is facts.defaults


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


def test_the_stride_check_asks_the_family():
    with pytest.raises(ConfigError, match=f"must be a multiple of {yolo_facts.STRIDE}"):
        load_config(CONFIG, [f"preprocess.img_size={yolo_facts.STRIDE * 4 + 1}"])
    assert load_config(CONFIG, ["model.arch=fcos_resnet50_fpn", "preprocess.img_size=129"]).preprocess.img_size == 129


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


@pytest.mark.parametrize("old, new, value", [
    ("preprocess.min_size", "preprocess.img_size", "480"), ("postprocess.box_score_thresh", "postprocess.conf_thres",
                                                            "0.05"),
    ("postprocess.box_nms_thresh", "postprocess.iou_thres", "0.5"),
    ("postprocess.detections_per_img", "postprocess.max_det", "100")])
def test_an_old_key_name_ends_with_the_new_one(old, new, value):
    with pytest.raises(ConfigError, match=f"{old} is now {new}.*--set {new}={value}"):
        load_config(CONFIG, ["model.arch=fasterrcnn_resnet50_fpn", "preprocess.img_size=null", f"{old}={value}"])


def test_a_run_directory_written_under_the_old_names_reads_back_under_the_new(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "model": {"arch": "fasterrcnn_resnet50_fpn"},
        "preprocess": {"min_size": 480, "max_size": 800},
        "postprocess": {"box_score_thresh": 0.05, "box_nms_thresh": 0.5, "detections_per_img": 100}}))
    config = FinishedRun(tmp_path).config()
    assert config["preprocess"] == {"max_size": 800, "img_size": 480}
    assert config["postprocess"] == {"conf_thres": 0.05, "iou_thres": 0.5, "max_det": 100}


def test_unknown_arch_names_every_family():
    with pytest.raises(ConfigError) as error:
        load_config(CONFIG, ["model.arch=resnet"])
    for facts in registry.FACTS:
        assert all(arch in str(error.value) for arch in facts.ARCHS)
    with pytest.raises(registry.UnknownArchitecture, match="model-definition .yaml"):
        registry.facts_for("resnet")


def test_a_forward_timed_in_parts_refuses_a_runtime_without_its_modules():
    assert rcnn_facts.FORWARD_TIMING == ForwardTiming.PARTS and dense_facts.FORWARD_TIMING == ForwardTiming.WHOLE
    runtime = load_config(CONFIG, ["runtime.backend=onnxruntime"]).runtime
    message = registry.runtime_refusal(rcnn_facts, runtime)
    assert "runtime.backend onnxruntime is not supported" in message and "timed in parts" in message
    assert message.endswith("use runtime.backend torch (precision fp32 or bf16)")
    assert registry.runtime_refusal(dense_facts, runtime) is None
    assert registry.runtime_refusal(rcnn_facts, load_config(CONFIG).runtime) is None
    compiled = load_config(CONFIG, ["runtime.compile=true"]).runtime
    assert "runtime.compile" in registry.runtime_refusal(rcnn_facts, compiled)
    assert registry.runtime_refusal(dense_facts, compiled) is None


def test_no_code_under_utils_names_a_family():
    names = {facts.NAME for facts in registry.FACTS}
    named = []
    for path in (ROOT / "utils").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                named.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert named == []
