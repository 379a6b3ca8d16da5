"""Detector families by name (pipelines/registry.py): the family that builds a model.arch, its facts and its module
agreeing, an unknown architecture naming every family's, and a runtime a family refuses."""
import ast

import pytest

from pipelines import registry
from pipelines.dense import facts as dense_facts
from pipelines.rcnn import facts as rcnn_facts
from pipelines.registry import UnknownArchitecture, family_for
from pipelines.settings import ForwardTiming
from pipelines.yolo import family as yolo_family
from tests.support.paths import ROOT, TINY_CONFIG as CONFIG
from utils.config.schema import ConfigError, load_config


def test_registry_picks_the_family_and_names_the_choices():
    assert family_for("yolov7") is yolo_family and family_for("my/yolo.yaml") is yolo_family
    with pytest.raises(UnknownArchitecture, match="yolov7-tiny"):
        family_for("resnet50")


def _example(facts) -> str:
    """An architecture the family builds, or a file name for the family whose network is a file."""
    return facts.ARCHS[0] if facts.ARCHS else f"detector{facts.ARCH_FILES[0]}"


def test_a_family_module_is_its_facts_plus_how_it_builds():
    for facts in registry.FACTS:
        family = registry.family_for(_example(facts))
        assert family.NAME == facts.NAME and family.ARCHS == facts.ARCHS and family.SIZE_KEYS == facts.SIZE_KEYS
        assert family.FORWARD_TIMING == facts.FORWARD_TIMING and family.defaults is facts.defaults


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
