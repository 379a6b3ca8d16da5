"""int8 models of the trained shapes model, each made in a process of its own (NNCF's and ONNX Runtime's quantizers
in one process crash it later), and what the tests of each runtime's quantizer (pipelines/runtimes/<name>/quantizer.py)
and operations fed float again (reverting.py) hold them to."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

from datasets.image_folder import DatasetBatches, decode_image, find_images
from datasets.labels import load_ground_truth
from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family
from tests.support.forward_inputs import as_taken
from tests.support.paths import SHAPES
from utils.checks.accuracy.coco_map import coco_evaluation
from utils.checks.int8.calibration_inputs import calibration_inputs
from utils.config.schema import CalibrationSection, config_for

SIZE = 96  # of the reverted models


def reverting_facts(runtime_name: str, cache_dir: Path) -> dict:
    """In a process of its own: NNCF's and ONNX Runtime's quantizers in one process crash it later."""
    from pipelines.runtimes.int8_contract import FLOAT
    from pipelines.runtimes.onnx_export import export_onnx
    from pipelines.runtimes.onnxruntime.reverting import OnnxRuntimeGraph
    from pipelines.runtimes.onnxruntime.quantizer import quantize_for_onnxruntime
    from pipelines.runtimes.openvino.quantizer import quantize_for_openvino
    from pipelines.runtimes.openvino.reverting import OpenVinoGraph, ir_files
    from pipelines.runtimes.openvino.signal_stack import shared_core

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


def assert_reverting_operations_feeds_them_float(runtime_name: str, tmp_path: Path) -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = pool.submit(reverting_facts, runtime_name, tmp_path).result(timeout=600)
    assert found["operations"] > 50  # yolov7-tiny's convolutions and more
    assert found["plain_differs"]
    assert found["all_reverted_error"] == 0.0
    assert found["none_reverted_equal"]
    assert found["one_differs"]
    assert found["saved_equal"] and found["saved_files"]


CALIBRATION_IMAGES = 8


def calibrating(images: int = CALIBRATION_IMAGES) -> CalibrationSection:
    """runtime.calibration on `images` images, Detect kept in float, the default method."""
    return CalibrationSection(images=images, keep_float=["Detect"])


# int8 is judged as the product judges it: by the mAP@0.5:0.95 it loses against fp32 on labelled images, at the
# accuracy pass's settings (conf 0.001, IoU 0.65), at the size the shapes model was trained at. The bound
# depends on the CPU. With VNNI (AVX512-VNNI, AVX-VNNI or AMX) int8 dot products accumulate exactly and both
# runtimes stay within the product's default budget (benchmark.accuracy.max_drop 0.01; measured here on 48
# scenes: OpenVINO -0.002, ONNX Runtime +0.004). Without it, x86 int8 kernels multiply through vpmaddubsw,
# whose int16 sums saturate: on an AVX2-only EPYC (300 scenes) OpenVINO lost 0.003 and ONNX Runtime's
# uint8-activation kernels 0.031, so there the bounds leave room for those losses and for an 8-image calibration.
VNNI_FLAGS = {"avx512_vnni", "avx_vnni", "amx_int8"}
MAX_DROP = {True: {"openvino": 0.01, "onnxruntime": 0.01}, False: {"openvino": 0.02, "onnxruntime": 0.05}}


ACCURACY = config_for("yolov7-tiny", preprocess={"img_size": 320},
                      postprocess={"conf_thres": 0.001, "iou_thres": 0.65, "max_det": 300})
ACCURACY_PRE, ACCURACY_POST = ACCURACY.preprocess, ACCURACY.postprocess


def cpu_has_vnni() -> bool:
    cpuinfo = Path("/proc/cpuinfo")
    flags = {flag for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else ())
             if line.startswith("flags") for flag in line.partition(":")[2].split()}
    return bool(flags & VNNI_FLAGS)


def int8_against_fp32(runtime_name: str, cache_dir: Path) -> dict:
    """Quantizes twice (the second from the cache), scores fp32 and int8 against the labels and returns what the
    test judges. It runs in a process of its own: NNCF's and ONNX Runtime's quantizers both run in one process
    crash it later, in unrelated code."""
    network = family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)
    paths = find_images(SHAPES / "images")
    truth = load_ground_truth(SHAPES / "labels", SHAPES / "images", paths, network.class_names)
    images = [decode_image(path, None).image for path in paths]
    calibration = calibration_inputs(family, network, ACCURACY_PRE, ACCURACY_POST, DatasetBatches(paths, 1),
                                     calibrating())
    batch = torch.from_numpy(next(iter(calibration.inputs())))

    def map_50_95(forward) -> float:
        pipeline = family.build_pipeline(network, forward, ACCURACY_PRE, ACCURACY_POST)
        return coco_evaluation(truth.images, [pipeline([image])[0] for image in images]).map_50_95

    fp32 = build_runtime("openvino", threads=2, cache_dir=cache_dir / "fp32").prepare(network, batch)
    runtime = build_runtime(runtime_name, precision="int8", threads=2, cache_dir=cache_dir, calibration=calibration)
    int8 = runtime.prepare(network, batch)
    again = build_runtime(runtime_name, precision="int8", threads=2, cache_dir=cache_dir, calibration=calibration)
    # Kept past later forwards (the mAP passes below), so copied: an output holds until the next forward.
    again_forward = again.prepare(network, batch)
    repeated = again_forward(as_taken(again_forward, batch)).clone()
    output = int8(as_taken(int8, batch)).clone()
    return {"preparation": runtime.settings()["preparation"], "precision": runtime.settings()["precision"],
            "fp32_map": map_50_95(fp32), "int8_map": map_50_95(int8),
            "differs_from_fp32": not torch.equal(output, fp32(as_taken(fp32, batch))),
            "repeat_equal": torch.equal(repeated, output),
            "repeat_cache_hit": again.settings()["preparation"]["quantized_cache_hit"]}


def assert_int8_stays_within_its_map_budget_and_is_cached(runtime_name: str, tmp_path: Path) -> None:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        found = pool.submit(int8_against_fp32, runtime_name, tmp_path).result(timeout=600)
    preparation = found["preparation"]
    assert preparation["quantized_cache_hit"] is False and preparation["float_layers"] == ["model.77"]
    assert found["precision"] == "int8"
    assert found["fp32_map"] > 0.5  # the trained model detects its shapes, so a drop means something
    vnni = cpu_has_vnni()
    drop = found["fp32_map"] - found["int8_map"]
    assert drop <= MAX_DROP[vnni][runtime_name], (
        f"int8 lost {drop:.4f} mAP@0.5:0.95 on a CPU {'with' if vnni else 'without'} VNNI")
    assert found["differs_from_fp32"]  # it really ran quantized
    assert found["repeat_equal"] and found["repeat_cache_hit"] is True
