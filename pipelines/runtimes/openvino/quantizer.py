"""OpenVINO's int8: NNCF's post-training quantization of the `ov.Model` read from the ONNX file (mixed
preset), cached as OpenVINO IR. A QDQ ONNX file is no way into OpenVINO: OpenVINO 2026.4 reading one lost most
of the mAP (shared notes)."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from pipelines.runtimes import cache_integrity
from pipelines.runtimes.openvino.signal_stack import kept_signal_stack
from pipelines.runtimes.int8_contract import named_inputs
from pipelines.runtimes.quantization import Calibration, quantized_path, staging, with_progress


def quantize_for_openvino(core: Any, export_path: Path, export_key: str, calibration: Calibration,
                          float_nodes: Sequence[str], directory: Optional[Path] = None) -> tuple[Path, dict[str, Any]]:
    """The cached OpenVINO IR (.xml + .bin) of the int8 model, quantized on a cache miss or where the cached
    one is damaged (cache_integrity)."""
    import nncf
    import openvino as ov

    settings = {"tool": "nncf", "nncf": nncf.__version__, "openvino": ov.get_version()}
    target, key = quantized_path(export_path, export_key, calibration, settings, ".xml", directory)
    files = [target, target.with_suffix(".bin")]
    with cache_integrity.building(target.parent):
        if cache_integrity.usable(files, key):
            return target, {"quantize_s": 0.0, "quantized_cache_hit": True, "quantized_file": str(target)}
        started = time.perf_counter()
        model = core.read_model(str(export_path))
        ignored = nncf.IgnoredScope(names=list(float_nodes), validate=False) if float_nodes else None
        image_name = model.inputs[0].get_any_name()
        dataset = nncf.Dataset(_ReIterable(lambda: with_progress(calibration, "openvino int8")),
                               lambda value: named_inputs(value, image_name) if isinstance(value, tuple) else value)
        method = calibration.settings
        with kept_signal_stack():  # NNCF makes Cores of its own
            quantized = nncf.quantize(model, dataset, preset=getattr(nncf.QuantizationPreset, PRESETS[method["preset"]]),
                                      subset_size=calibration.images, ignored_scope=ignored,
                                      fast_bias_correction=method["bias_correction"] != "full",
                                      advanced_parameters=_advanced(method))
        with staging(target) as directory:
            partial = directory / target.name
            ov.save_model(quantized, str(partial), compress_to_fp16=False)
            os.replace(partial.with_suffix(".bin"), target.with_suffix(".bin"))
            os.replace(partial, target)
        cache_integrity.record(files, key)
    return target, {"quantize_s": time.perf_counter() - started, "quantized_cache_hit": False,
                    "quantized_file": str(target)}


PRESETS = {"mixed": "MIXED", "performance": "PERFORMANCE"}


def _advanced(method: dict[str, str]):
    """NNCF's advanced parameters for runtime.calibration's range and bias_correction; None: its defaults."""
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters
    from nncf.quantization.range_estimator import RangeEstimatorParametersSet

    ranges = {"minmax": RangeEstimatorParametersSet.MINMAX, "percentile": RangeEstimatorParametersSet.MEAN_QUANTILE}
    options = {}
    if method["range"] in ranges:
        options["activations_range_estimator_params"] = ranges[method["range"]]
    if method["bias_correction"] == "none":
        options["disable_bias_correction"] = True
    return AdvancedQuantizationParameters(**options) if options else None


class _ReIterable:
    def __init__(self, make: Callable[[], Iterator[np.ndarray]]):
        self.make = make

    def __iter__(self) -> Iterator[np.ndarray]:
        return self.make()
