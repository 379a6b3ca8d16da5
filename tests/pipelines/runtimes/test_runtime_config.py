"""The runtime section: choices, impossible combinations refused at start-up, the moved threads key, and the
torch variants it selects."""
import pytest

from benchmark import main
from pipelines.runtimes.registry import RUNTIMES, SPECS
from utils.config.schema import ConfigError, RuntimeSection, load_config

CONFIG = "configs/samples_tiny.yaml"


def test_defaults_are_torch_fp32():
    runtime = load_config(CONFIG).runtime
    assert (runtime.backend, runtime.precision, runtime.channels_last, runtime.compile, runtime.threads) == (
        "torch", "fp32", False, False, None)


def test_every_backend_the_config_offers_is_registered():
    assert set(SPECS) == set(RuntimeSection.model_fields["backend"].annotation.__args__)
    assert set(SPECS) == set(RUNTIMES) and all(SPECS[name].name == name for name in RUNTIMES)
    offered = {precision for spec in SPECS.values() for precision in spec.precisions}
    assert offered == set(RuntimeSection.model_fields["precision"].annotation.__args__)


@pytest.mark.parametrize("overrides, words", [
    (["runtime.backend=onnxruntime", "runtime.precision=bf16"], ["onnxruntime", "bf16", "torch or openvino"]),
    (["runtime.precision=int8"], ["int8", "PT2E", "runtime.backend onnxruntime or openvino"]),
    (["runtime.backend=openvino", "runtime.channels_last=true"], ["runtime.channels_last", "torch only"]),
    (["runtime.backend=onnxruntime", "runtime.compile=true"], ["runtime.compile", "torch only"]),
    (["runtime.input_precision=u8"], ["runtime.input_precision", "openvino only", "runtime.backend: openvino"]),
    (["runtime.backend=openvino", "runtime.input_precision=f16"], ["runtime.input_precision", "f16", "u8"]),
    (["runtime.backend=tensorrt"], ["runtime.backend", "tensorrt"]),
    (["model.threads=2"], ["model.threads is now runtime.threads", "--set runtime.threads=2"]),
])
def test_impossible_combinations_name_the_keys(overrides, words):
    with pytest.raises(ConfigError) as error:
        load_config(CONFIG, overrides)
    for word in words:
        assert word in str(error.value)
    assert "{" not in str(error.value)  # no dump of the whole section


def test_cli_exits_2_on_a_runtime_mistake(tmp_path, capsys):
    code = main(["--config", CONFIG, "--set", "runtime.precision=int8", "--set", f"run.output_dir={tmp_path}"])
    assert code == 2 and "int8" in capsys.readouterr().err and not any(tmp_path.iterdir())


def test_a_section_check_blames_only_the_set_it_names(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("dataset: {path: datasets/samples}\nmodel: {threads: 2}\n")
    with pytest.raises(ConfigError) as error:
        load_config(config, ["model.arch=yolov7-tiny"])
    assert "model.arch" not in str(error.value) and str(config) in str(error.value)
    with pytest.raises(ConfigError) as error:
        load_config(CONFIG, ["runtime.backend=openvino", "runtime.compile=true", "model.arch=yolov7"])
    assert "(from --set runtime.backend=openvino, runtime.compile=true)" in str(error.value)
    assert "model.arch" not in str(error.value)
