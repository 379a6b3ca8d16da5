"""int8 through the runtime seam on the trained shapes model: calibrated on its own images through the run's
preprocessing, close to fp32, cached by its inputs, and the Detect head's decode kept in float."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import onnx
import pytest
import torch

from datasets.image_folder import find_images
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.onnx_export import export_onnx
from pipelines.runtimes.onnxruntime.session import OnnxRuntime
from pipelines.runtimes.openvino.session import OpenVinoRuntime
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


def int8_against_fp32(runtime_name: str, cache_dir: Path) -> dict:
    """Quantizes twice (the second from the cache) and returns what the test judges. It runs in a process of
    its own: NNCF's and ONNX Runtime's quantizers both run in one process crash it later, in unrelated code."""
    runtime_class = {"openvino": OpenVinoRuntime, "onnxruntime": OnnxRuntime}[runtime_name]
    network = family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)
    calibration = calibration_inputs(family, network, PRE, POST, find_images(SHAPES / "images"), CALIBRATION_IMAGES,
                                     ["Detect"])
    batch = torch.from_numpy(next(iter(calibration.inputs())))
    fp32_output = OpenVinoRuntime(threads=2, cache_dir=cache_dir / "fp32").prepare(network, batch)(batch)
    runtime = runtime_class(precision="int8", threads=2, cache_dir=cache_dir, calibration=calibration)
    output = runtime.prepare(network, batch)(batch)
    again = runtime_class(precision="int8", threads=2, cache_dir=cache_dir, calibration=calibration)
    repeated = again.prepare(network, batch)(batch)
    scores = family.build_pipeline(network, None, PRE, POST).candidate_scores
    top = scores(fp32_output).topk(5, dim=1)
    best = top.indices[0, 0]
    return {"preparation": runtime.settings()["preparation"], "precision": runtime.settings()["precision"],
            "score_error": float((scores(output).gather(1, top.indices) - top.values).abs().mean()),
            "best_box_error": float((output[0, best, :4] - fp32_output[0, best, :4]).abs().max()),
            "differs_from_fp32": not torch.equal(output, fp32_output),
            "repeat_equal": torch.equal(repeated, output),
            "repeat_cache_hit": again.settings()["preparation"]["quantized_cache_hit"]}


@pytest.mark.parametrize("runtime_name", ["openvino", "onnxruntime"])
def test_int8_is_close_to_fp32_and_cached(runtime_name, tmp_path):
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = pool.submit(int8_against_fp32, runtime_name, tmp_path).result(timeout=600)
    preparation = found["preparation"]
    assert preparation["quantized_cache_hit"] is False and preparation["float_layers"] == ["model.77"]
    assert found["precision"] == "int8"
    # a trained model's top candidates keep their scores within about a tenth under int8 (at 160 px, half the
    # size it was trained at, on 8 calibration images), and the best one its box within a couple of pixels
    assert found["score_error"] < 0.1
    assert found["best_box_error"] < 2.0
    assert found["differs_from_fp32"]  # it really ran quantized
    assert found["repeat_equal"] and found["repeat_cache_hit"] is True


def test_int8_refuses_a_keep_float_naming_no_layer(network, calibration, batch, tmp_path):
    wrong = type(calibration)(calibration.inputs, calibration.images, calibration.digest, ("Head",))
    with pytest.raises(RuntimeNotSupported, match="keep_float 'Head' names no layer"):
        OpenVinoRuntime(precision="int8", cache_dir=tmp_path, calibration=wrong).prepare(network, batch)
