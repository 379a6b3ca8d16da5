"""int8 through the runtime seam on the trained shapes model: calibrated on its own images through the run's
preprocessing, close to fp32, cached by its inputs, and the Detect head's decode kept in float."""
from __future__ import annotations

from pathlib import Path

import onnx
import pytest
import torch

from datasets.image_folder import find_images
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.onnx_export import export_onnx
from pipelines.runtimes.onnxruntime_runtime import OnnxRuntime
from pipelines.runtimes.openvino_runtime import OpenVinoRuntime
from pipelines.runtimes.quantization import decode_nodes, float_module_paths
from pipelines.yolo import family
from utils.config import PostprocessSection, PreprocessSection
from utils.harness.calibration_inputs import calibration_inputs

SHAPES = Path(__file__).resolve().parents[1] / "datasets" / "shapes"
PRE, POST = PreprocessSection(img_size=160), PostprocessSection()
CALIBRATION_IMAGES = 8


@pytest.fixture(scope="module")
def network():
    return family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)


@pytest.fixture(scope="module")
def paths():
    return find_images(SHAPES / "images")


@pytest.fixture(scope="module")
def calibration(network, paths):
    return calibration_inputs(family, network, PRE, POST, paths, CALIBRATION_IMAGES, ["Detect"])


@pytest.fixture(scope="module")
def batch(network, calibration):
    return torch.from_numpy(next(iter(calibration.inputs())))


@pytest.fixture(scope="module")
def fp32_output(network, batch, tmp_path_factory):
    return OpenVinoRuntime(threads=2, cache_dir=tmp_path_factory.mktemp("fp32")).prepare(network, batch)(batch)


def test_calibration_inputs_are_the_pipelines_network_inputs(network, paths, calibration):
    inputs = list(calibration.inputs())
    assert len(inputs) == calibration.images == CALIBRATION_IMAGES
    pipeline = family.build_pipeline(network, None, PRE, POST)
    import cv2
    expected = pipeline.preprocess([cv2.imread(str(paths[0]))]).tensor
    assert torch.equal(torch.from_numpy(inputs[0]), expected)
    # the digest follows the images and the preprocessing
    other = calibration_inputs(family, network, PreprocessSection(img_size=192), POST, paths, 8, ["Detect"])
    fewer = calibration_inputs(family, network, PRE, POST, paths, 4, ["Detect"])
    assert len({calibration.digest, other.digest, fewer.digest}) == 3


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


@pytest.mark.parametrize("runtime_class", [OpenVinoRuntime, OnnxRuntime])
def test_int8_is_close_to_fp32_and_cached(runtime_class, network, calibration, batch, fp32_output, tmp_path):
    runtime = runtime_class(precision="int8", threads=2, cache_dir=tmp_path, calibration=calibration)
    output = runtime.prepare(network, batch)(batch)
    preparation = runtime.settings()["preparation"]
    assert preparation["quantized_cache_hit"] is False and preparation["float_layers"] == ["model.77"]
    assert runtime.settings()["precision"] == "int8"
    scores = family.build_pipeline(network, None, PRE, POST).candidate_scores
    top = scores(fp32_output).topk(5, dim=1)
    # a trained model's top candidates keep their scores within about a tenth under int8 (at 160 px, half the
    # size it was trained at, on 8 calibration images), and the best one its box within a couple of pixels
    assert (scores(output).gather(1, top.indices) - top.values).abs().mean() < 0.1
    best = top.indices[0, 0]
    assert (output[0, best, :4] - fp32_output[0, best, :4]).abs().max() < 2.0
    assert not torch.equal(output, fp32_output)  # it really ran quantized
    again = runtime_class(precision="int8", threads=2, cache_dir=tmp_path, calibration=calibration)
    assert torch.equal(again.prepare(network, batch)(batch), output)
    assert again.settings()["preparation"]["quantized_cache_hit"] is True


def test_int8_refuses_a_keep_float_naming_no_layer(network, calibration, batch, tmp_path):
    wrong = type(calibration)(calibration.inputs, calibration.images, calibration.digest, ("Head",))
    with pytest.raises(RuntimeNotSupported, match="keep_float 'Head' names no layer"):
        OpenVinoRuntime(precision="int8", cache_dir=tmp_path, calibration=wrong).prepare(network, batch)
