"""ONNX Runtime's int8: static QDQ quantization (`quant_pre_process` without symbolic shape inference, which
fails on the dynamic axes; then `quantize_static`, per-channel weights, uint8 activations), cached as ONNX."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from pipelines.runtimes import cache_integrity
from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.int8_contract import named_inputs
from pipelines.runtimes.quantization import Calibration, quantized_path, staging, with_progress


class _Reader:
    """ONNX Runtime's CalibrationDataReader protocol over the calibration inputs."""

    def __init__(self, calibration: Calibration, input_name: str):
        self.calibration, self.input_name = calibration, input_name
        self.iterator = with_progress(calibration, "onnxruntime int8")

    def get_next(self):
        value = next(self.iterator, None)
        return None if value is None else named_inputs(value, self.input_name)

    def rewind(self) -> None:
        self.iterator = with_progress(self.calibration, "onnxruntime int8")


def quantize_for_onnxruntime(export_path: Path, export_key: str, calibration: Calibration,
                             float_nodes: Sequence[str], input_name: str,
                             directory: Optional[Path] = None) -> tuple[Path, dict[str, Any]]:
    """The cached QDQ ONNX file of the int8 model, quantized on a cache miss or where the cached one is
    damaged (cache_integrity)."""
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quant_pre_process, quantize_static

    method = calibration.settings
    if method["bias_correction"] != "fast":
        raise RuntimeNotSupported(f"runtime.calibration.bias_correction {method['bias_correction']}: ONNX Runtime's "
                                  "static quantization corrects no biases; use runtime.backend openvino, or remove it")
    activations = QuantType.QInt8 if method["preset"] == "performance" else QuantType.QUInt8
    ranges = CalibrationMethod.Percentile if method["range"] == "percentile" else CalibrationMethod.MinMax
    settings = {"tool": "onnxruntime.quantize_static", "onnxruntime": ort.__version__, "format": "QDQ",
                "per_channel": "True", "activations": activations.name, "weights": "QInt8"}
    target, key = quantized_path(export_path, export_key, calibration, settings, ".onnx", directory)
    with cache_integrity.building(target.parent):
        if cache_integrity.usable([target], key):
            return target, {"quantize_s": 0.0, "quantized_cache_hit": True, "quantized_file": str(target)}
        started = time.perf_counter()
        with staging(target) as directory:
            prepared = directory / "preprocessed.onnx"
            quant_pre_process(str(export_path), str(prepared), skip_symbolic_shape=True)
            partial = directory / target.name
            quantize_static(str(prepared), str(partial), _Reader(calibration, input_name),
                            quant_format=QuantFormat.QDQ, per_channel=True, activation_type=activations,
                            weight_type=QuantType.QInt8, nodes_to_exclude=list(float_nodes),
                            calibrate_method=ranges)
            os.replace(partial, target)
        cache_integrity.record([target], key)
    return target, {"quantize_s": time.perf_counter() - started, "quantized_cache_hit": False,
                    "quantized_file": str(target)}
