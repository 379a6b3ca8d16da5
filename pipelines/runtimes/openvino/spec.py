"""OpenVINO's CPU plugin over the cached ONNX export, or a file given as model.file (ONNX, IR, or a .tflite through
its TFLite frontend): what it offers, how it profiles (counters per layer, no timeline to merge into trace.json)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipelines.runtimes.spec import KernelSource, NativeCode, RuntimeOptions, RuntimeSpec


INPUT_PRECISIONS = ("auto", "u8", "f32")


class OpenVinoOptions(RuntimeOptions):
    input_precision: Literal[INPUT_PRECISIONS] = Field(
        "auto", description="openvino only: the element type the compiled model takes. u8: the pipeline hands over "
                            "the letterboxed pixels and OpenVINO's preprocessing converts them to f32 inside the "
                            "compiled model, as benchmark_app feeds an image input; f32: the pipeline converts. "
                            "auto: u8 where the family's input is scaled pixels (YOLO), else f32")


SPEC = RuntimeSpec(
    name="openvino",
    precisions=("fp32", "bf16", "int8", "int8+bf16"),
    caches=True,
    file_kinds=(".onnx", ".xml", ".tflite"),
    # Its TFLite frontend has no translator for TF OD API SSDs' postprocess operator (OpenVINO 2026.4).
    lacks_operators=("TFLite_Detection_PostProcess",),
    session="session:OpenVinoRuntime",
    library="openvino",
    options=OpenVinoOptions,
    layer_reader="layers:read_layers",
    preparing="the ONNX export is cached; the first one takes a while",
    native=NativeCode("openvino", "OpenVINO", r"libopenvino", "libopenvino"),
    log_sources=("openvino", "nncf"),
    kernels=KernelSource("measured", source="OpenVINO's exec types per layer (layer_timer.csv name and kernel "
                                            "columns), from the layers pass", from_layers=True),
)
