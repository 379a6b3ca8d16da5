"""Operations of a real int8 model fed float again (pipelines/runtimes/<runtime>/reverting.py), on the trained
shapes model: every operation reverted computes exactly what the float model does, none reverted what the
quantized one does, and a saved model runs as the one in memory."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import SHAPES

pytestmark = pytest.mark.slow  # exports and quantizes the shapes model

SIZE = 96


def reverting_facts(runtime_name: str, cache_dir: Path) -> dict:
    """In a process of its own: NNCF's and ONNX Runtime's quantizers in one process crash it later."""
    import torch

    from datasets.image_folder import DatasetBatches, find_images
    from pipelines.runtimes.int8_contract import FLOAT
    from pipelines.runtimes.onnx_export import export_onnx
    from pipelines.runtimes.onnxruntime.reverting import OnnxRuntimeGraph
    from pipelines.runtimes.onnxruntime.quantizer import quantize_for_onnxruntime
    from pipelines.runtimes.openvino.quantizer import quantize_for_openvino
    from pipelines.runtimes.openvino.reverting import OpenVinoGraph, ir_files
    from pipelines.runtimes.openvino.signal_stack import shared_core
    from pipelines.yolo import family
    from utils.config.schema import CalibrationSection, config_for
    from utils.checks.int8.calibration_inputs import calibration_inputs

    config = config_for("yolov7-tiny", preprocess={"img_size": SIZE})
    network = family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)
    calibration = calibration_inputs(family, network, config.preprocess, config.postprocess,
                                     DatasetBatches(find_images(SHAPES / "images"), 1),
                                     CalibrationSection(images=4, keep_float=[]))
    array = next(iter(calibration.inputs()))
    export = export_onnx(network, torch.from_numpy(array), cache_dir, 17, True)
    if runtime_name == "openvino":
        core = shared_core()
        quantized, _ = quantize_for_openvino(core, export.path, export.key, calibration, [], cache_dir)
        graph, files = OpenVinoGraph(core, quantized, export.path, 2), ir_files
    else:
        quantized, _ = quantize_for_onnxruntime(export.path, export.key, calibration, [], "images", cache_dir)
        graph, files = OnnxRuntimeGraph(quantized, export.path, 2), lambda path: [path]
    names = graph.operations()
    float_output = graph.forward(FLOAT)(array)
    plain = graph.forward(None)(array)
    one = graph.reverted(names[-1:])
    target = cache_dir / f"one{quantized.suffix}"
    graph.save(one, target)
    reread = (OpenVinoGraph(core, target, export.path, 2) if runtime_name == "openvino"
              else OnnxRuntimeGraph(target, export.path, 2))
    return {"operations": len(names), "plain_differs": not np.array_equal(plain, float_output),
            "all_reverted_error": float(np.abs(graph.forward(graph.reverted(names))(array) - float_output).max()),
            "none_reverted_equal": np.array_equal(graph.forward(graph.reverted([]))(array), plain),
            "one_differs": not np.array_equal(graph.forward(one)(array), plain),
            "saved_equal": np.array_equal(reread.forward(None)(array), graph.forward(one)(array)),
            "saved_files": all(path.is_file() for path in files(target))}


@pytest.mark.parametrize("runtime_name", ["openvino", "onnxruntime"])
def test_reverting_operations_feeds_them_float(runtime_name, tmp_path):
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = pool.submit(reverting_facts, runtime_name, tmp_path).result(timeout=600)
    assert found["operations"] > 50  # yolov7-tiny's convolutions and more
    assert found["plain_differs"]
    assert found["all_reverted_error"] == 0.0
    assert found["none_reverted_equal"]
    assert found["one_differs"]
    assert found["saved_equal"] and found["saved_files"]
