"""int8's calibration method is a setting (runtime.calibration preset, range, bias_correction), keys the cache,
and is recorded with the quantized model."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import torch

from pipelines.runtimes.registry import build_runtime
from tests.support.paths import ROOT, SHAPES
from utils.config.schema import ConfigError, load_config


def _calibration(method: dict):
    from datasets.image_folder import DatasetBatches, find_images
    from pipelines.yolo import family
    from utils.config.schema import CalibrationSection, config_for
    from utils.checks.int8.calibration_inputs import calibration_inputs

    network = family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)
    config = config_for("yolov7-tiny", preprocess={"img_size": 96})
    return network, calibration_inputs(family, network, config.preprocess, config.postprocess,
                                       DatasetBatches(find_images(SHAPES / "images"), 1),
                                       CalibrationSection(images=4, keep_float=["Detect"], **method))


def quantized_with(cache_dir: Path, method: dict) -> dict:
    """In a process of its own, as the other int8 tests: NNCF quantizes with this method."""

    network, calibration = _calibration(method)
    batch = torch.from_numpy(next(iter(calibration.inputs())))
    runtime = build_runtime("openvino", precision="int8", threads=1, cache_dir=cache_dir, calibration=calibration,
                              input_precision="f32")
    runtime.prepare(network, batch)(batch)
    return runtime.settings()["preparation"]


@pytest.mark.slow
def test_the_method_is_recorded_and_keys_the_cache(tmp_path):
    default = {"preset": "mixed", "range": "default", "bias_correction": "fast"}
    other = {"preset": "performance", "range": "percentile", "bias_correction": "none"}
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        first = pool.submit(quantized_with, tmp_path, default).result()
        second = pool.submit(quantized_with, tmp_path, other).result()
    assert first["method"] == default and second["method"] == other
    assert first["quantized_file"] != second["quantized_file"] and not second["quantized_cache_hit"]


@pytest.mark.slow
def test_onnx_runtime_refuses_a_bias_correction_it_does_not_have(tmp_path):
    from pipelines.runtimes.base import RuntimeNotSupported

    network, calibration = _calibration({"preset": "mixed", "range": "default", "bias_correction": "full"})
    batch = torch.from_numpy(next(iter(calibration.inputs())))
    with pytest.raises(RuntimeNotSupported, match="bias_correction full: ONNX Runtime's static quantization"):
        build_runtime("onnxruntime", precision="int8", threads=1, cache_dir=tmp_path,
                      calibration=calibration).prepare(network, batch)


def test_the_config_offers_the_methods_and_nothing_else():
    config = load_config(ROOT / "configs" / "shapes.yaml", ["runtime.calibration.range=percentile"])
    assert config.runtime.calibration.range == "percentile" and config.runtime.calibration.preset == "mixed"
    with pytest.raises(ConfigError, match="runtime.calibration.preset"):
        load_config(ROOT / "configs" / "shapes.yaml", ["runtime.calibration.preset=fast"])
