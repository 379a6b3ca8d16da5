"""int8 through the runtime seam (pipelines/runtimes/quantization.py) on the trained shapes model: the Detect head's
decode kept in float, a keep_float naming no layer refused, int8 with bf16 float layers. Each runtime's quantizer is
tested beside it (pipelines/runtimes/<name>/test_quantizer.py)."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch

from datasets.image_folder import DatasetBatches, find_images
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.onnx_export import export_onnx
from pipelines.runtimes.quantization import decode_nodes, float_module_paths
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family
from tests.support.forward_inputs import as_taken
from tests.support.int8_models import calibrating
from tests.support.paths import SHAPES
from utils.config.schema import config_for
from utils.checks.int8.calibration_inputs import calibration_inputs

pytestmark = pytest.mark.slow  # int8 calibration and export of the shapes model

PRE, POST = config_for("yolov7-tiny", preprocess={"img_size": 160}).preprocess, config_for("yolov7-tiny").postprocess


@pytest.fixture(scope="module")
def network():
    return family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)


@pytest.fixture(scope="module")
def paths():
    return find_images(SHAPES / "images")


@pytest.fixture(scope="module")
def calibration(network, paths):
    return calibration_inputs(family, network, PRE, POST, DatasetBatches(paths, 1), calibrating())


@pytest.fixture(scope="module")
def batch(network, calibration):
    return torch.from_numpy(next(iter(calibration.inputs())))


def test_keep_float_resolves_types_and_paths_and_refuses_typos(network, batch, tmp_path):
    assert float_module_paths(network.module, ["Detect"]) == ["model.77"]
    assert float_module_paths(network.module, ["model.0"]) == ["model.0"]
    with pytest.raises(ValueError, match="'Dettect' names no layer"):
        float_module_paths(network.module, ["Dettect"])
    exported = export_onnx(network, batch, tmp_path)
    nodes = decode_nodes(exported.path, ["model.77"])
    types = {n.name: n.op_type for n in onnx.load(str(exported.path)).graph.node}
    assert nodes and all(types[name] != "Conv" for name in nodes)
    assert any(t == "Conv" and name.startswith("/model.77/") for name, t in types.items())


def test_int8_refuses_a_keep_float_naming_no_layer(network, calibration, batch, tmp_path):
    wrong = type(calibration)(calibration.inputs, calibration.images, calibration.digest, ("Head",))
    with pytest.raises(RuntimeNotSupported, match="keep_float 'Head' names no layer"):
        build_runtime("openvino", precision="int8", cache_dir=tmp_path, calibration=wrong).prepare(network, batch)


def cpu_has_bf16() -> bool:
    cpuinfo = Path("/proc/cpuinfo")
    return bool({"avx512_bf16", "amx_bf16"} & {flag for line in cpuinfo.read_text().splitlines()
                                                if line.startswith("flags") for flag in line.partition(":")[2].split()})


@pytest.mark.skipif(not cpu_has_bf16(), reason="int8+bf16 needs a CPU with native bf16")
def test_int8_with_bf16_float_layers_runs_the_int8_model_at_a_bf16_hint(network, calibration, batch, tmp_path):
    int8 = build_runtime("openvino", precision="int8", threads=2, cache_dir=tmp_path, calibration=calibration)
    plain = int8.prepare(network, batch)
    mixed = build_runtime("openvino", precision="int8+bf16", threads=2, cache_dir=tmp_path, calibration=calibration)
    forward = mixed.prepare(network, batch)
    settings = mixed.settings()
    assert settings["precision"] == "int8+bf16" and settings["inference_precision_hint"] == "bf16"
    assert int8.settings()["inference_precision_hint"] == "f32"
    # The same quantized model, from the cache: only where its float layers run differs.
    assert settings["preparation"]["quantized_cache_hit"] is True
    # Here only the decode stays in float, which the plugin may keep at f32 either way: the outputs agree.
    first = plain(as_taken(plain, batch)).clone()
    second = forward(as_taken(forward, batch)).clone()
    scores = (first[..., 4] * first[..., 5:].amax(-1)).flatten()
    top = scores.topk(5).indices
    assert torch.allclose(scores[top], (second[..., 4] * second[..., 5:].amax(-1)).flatten()[top], atol=0.1)
