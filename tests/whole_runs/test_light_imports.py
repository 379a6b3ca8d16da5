"""The config schema, the runtime registry, the family facts and the measurement registry import no heavy library:
`--help` and a config error answer before torch, ONNX Runtime or OpenVINO would have loaded, and a measurement's
plots load matplotlib only when they are drawn."""
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

HEAVY = ("torch", "torchvision", "onnxruntime", "openvino", "nncf", "matplotlib")


@pytest.mark.parametrize("modules", [
    ("utils.config.schema",),
    ("pipelines.runtimes.registry",),
    ("pipelines.registry",),
    ("utils.config.schema", "pipelines.runtimes.registry", "pipelines.registry"),
    ("utils.measure.registry",),
])
def test_schema_and_registries_import_no_heavy_library(modules):
    # The registries' own answers are asked too: reading every spec and every family's facts stays light.
    code = ("import importlib, sys\n"
            f"for name in {modules!r}: importlib.import_module(name)\n"
            "from pipelines.runtimes import registry\n"
            "from pipelines.registry import facts_for\n"
            "assert registry.is_reference({'backend': 'torch', 'precision': 'fp32'})\n"
            "assert facts_for('yolov7-tiny').NAME == 'yolo'\n"
            "import utils.config.schema\n"
            "utils.config.schema.RuntimeSection(backend='openvino', precision='int8')\n"
            f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_config_error_loads_no_heavy_library(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("dataset: {path: x}\nruntime: {backend: onnxruntime, precision: bf16}\n")
    code = ("import sys\n"
            "from utils.config.schema import ConfigError, load_config\n"
            f"try:\n    load_config({str(config)!r})\nexcept ConfigError as error:\n    print(error, file=sys.stderr)\n"
            f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "runtime.backend onnxruntime runs precision fp32, int8, not bf16" in result.stderr
    assert result.stdout.strip() == "[]"
