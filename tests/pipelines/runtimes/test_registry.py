"""The runtime registry: every line names a folder whose spec, session and readers exist and agree, the
reference configuration is recognised from a config section and from a run's settings, and the config's
runtime section is assembled from the runtimes' own sections."""
import importlib

import pytest

from pipelines.runtimes import registry
from pipelines.runtimes.base import Runtime
from utils.config.schema import ConfigError, RuntimeSection, _RuntimeCommon, load_config

CONFIG = "configs/samples_tiny.yaml"


@pytest.mark.parametrize("name", registry.RUNTIMES)
def test_each_folder_holds_what_its_spec_names(name):
    spec = registry.SPECS[name]
    session = registry._attribute(spec, spec.session)
    assert issubclass(session, Runtime) and session.name == name
    for reader in (registry.layer_reader(name), registry.trace_reader(name)):
        assert reader is None or callable(reader)
    assert set(spec.refusals).isdisjoint(spec.precisions)  # a refusal explains a precision not offered
    for key in spec.options.model_fields:
        assert key in RuntimeSection.model_fields  # its own keys are the section's keys
        assert key not in _RuntimeCommon.model_fields and key not in ("backend", "precision")
    assert importlib.import_module(f"pipelines.runtimes.{name}.spec").SPEC is spec


def test_one_reference_whose_defaults_are_the_config_defaults():
    assert [spec.name for spec in registry.SPECS.values() if spec.reference] == [registry.REFERENCE.name]
    default = RuntimeSection()
    assert (default.backend, default.precision) == (registry.REFERENCE.name, registry.REFERENCE_PRECISION)
    assert registry.is_reference(default.model_dump())


@pytest.mark.parametrize("settings, reference", [
    ({"backend": "torch", "precision": "fp32", "channels_last": False, "compile": False}, True),
    ({"backend": "torch", "precision": "fp32"}, True),  # a run's settings without the options
    ({"backend": "torch", "precision": "fp32", "channels_last": None}, True),
    ({"backend": "torch", "precision": "bf16"}, False),
    ({"backend": "torch", "precision": "fp32", "compile": True}, False),
    ({"backend": "torch", "precision": "fp32", "channels_last": True}, False),
    ({"backend": "onnxruntime", "precision": "fp32"}, False),
    ({"backend": "tensorrt", "precision": "fp32"}, False),
    ({}, False),
])
def test_is_reference(settings, reference):
    assert registry.is_reference(settings) is reference


def test_a_section_of_another_backend_is_not_the_reference():
    for overrides in (["runtime.channels_last=true"], ["runtime.backend=openvino"], ["runtime.precision=bf16"]):
        assert not registry.is_reference(load_config(CONFIG, overrides).runtime.model_dump())


def test_runtime_options_are_strict_like_every_key():
    with pytest.raises(ConfigError, match="runtime.compile: must be true or false"):
        load_config(CONFIG, ["runtime.compile=\"yes\""])


def test_who_offers_a_precision_follows_the_specs():
    assert registry.offering("int8") == [spec.name for spec in registry.SPECS.values() if "int8" in spec.precisions]
    assert registry.offering("fp64") == []
