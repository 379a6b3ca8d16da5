"""What the exported family states about itself: a detector given as a file (`model.file`, an ONNX file, an
OpenVINO IR or a TFLite file), whose network is the file. Its defaults come from the file and its layout
(layouts/): the input size of a static graph (or the metadata's imgsz), the layout's recipe (how its author
preprocesses), the author's predict settings (Ultralytics': conf 0.25, IoU 0.7, 300 kept, unless the layout says
its own). Light: the file is read (inspection.py) and the layouts imported only when a config names a file."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Optional

from pydantic import BaseModel, Field, field_validator

from pipelines.boxes.keys import NmsKeys
from pipelines.exported.inspection import (FILE_SUFFIXES, FORMATS, ONNX_SUFFIX, PICKLE_SUFFIXES, TFLITE_SUFFIX,
                                          ExportedFile, read_exported)
from pipelines.exported.recipe import Preprocess  # noqa: F401 (the family's preprocess keys)
from pipelines.runtimes import registry as runtimes
from pipelines.runtimes.spec import quantizes
from pipelines.settings import ArchDefaults, Evaluation, ForwardTiming

NAME = "exported"
ARCHS: tuple[str, ...] = ()  # any file: model.file names it
ARCH_FILES = FILE_SUFFIXES
ARCH_FILE_TEXT = "an exported detector file (.onnx, an OpenVINO IR's .xml, or .tflite) given as model.file"
STRIDE = 32  # YOLO exports' largest stride; the input size is the file's own where its graph fixes it
SIZE_KEYS = ("img_size",)
OUTPUT_LAYOUT = "the file's own: one of the layouts in pipelines/exported/layouts/"
EVALUATION_PREPROCESS = None  # scored as deployed: the exporter's own predictor's preprocessing
FORWARD_TIMING = ForwardTiming.WHOLE
CONFIG = "configs/files.yaml"  # a config made for files, which a message suggests when another's keys do not apply
DEFAULT_SIZE = 640  # a dynamic file without metadata: Ultralytics' default export size
INPUT_TYPES = ("float16", "uint8", "int8")  # the element types fed as they are; any other image input takes float32
# Ultralytics' predict defaults (conf 0.25, IoU 0.7, 300 kept, class-aware) and its val protocol (conf 0.001).
DEPLOYED = {"conf_thres": 0.25, "iou_thres": 0.7, "max_det": 300}
VALIDATION = Evaluation(0.001, 0.7, 300, True, "Ultralytics' val: conf 0.001, IoU 0.7, 300 per image, every class "
                                               "per box; scored by COCOeval")
OWN_ROWS = Evaluation(0.0, 0.7, 300, None, "the file's own rows: its graph (NMS and a score cut, or a DETR's top-k) "
                                           "already keeps one box per object, so every row it returns is scored, as "
                                           "DETRs' own COCO evaluation does; not comparable with a plain YOLO "
                                           "export's conf-0.001 mAP")


class Model(BaseModel):
    """The family's own model keys."""

    head: Optional[str] = Field(None, description=(
        "exported: the file's output layout, where its outputs and metadata leave it open (see "
        "[models.md](models.md#a-detector-given-as-a-file)); null: read from the file"))

    @field_validator("head")
    @classmethod
    def _known_layout(cls, value: Optional[str]) -> Optional[str]:
        from pipelines.exported import layouts

        if value is not None and value not in layouts.names():
            raise ValueError(f"must be one of {', '.join(layouts.names())}")
        return value


class Postprocess(NmsKeys):
    """Where NMS follows the graph, whether it is one over every class at once."""


def accepts(source: str) -> bool:
    return Path(source).suffix in FILE_SUFFIXES + PICKLE_SUFFIXES


@lru_cache(maxsize=8)
def exported_file(source: str) -> ExportedFile:
    return read_exported(source)


def read(source: str, head: Optional[str] = None):
    """The file, its layout's module and the layout's reading of it (model.head decides where given), read once
    per process; the file is never written."""
    from pipelines.exported import layouts

    exported = exported_file(source)
    reading = layouts.read_layout(exported, head)
    return exported, layouts.layout(reading.layout), reading


def head_of(model: Any) -> Optional[str]:
    return getattr(model, "head", None) if model is not None else None


def input_hw(exported: ExportedFile, img_size: Optional[int]) -> tuple[int, int]:
    """The input's (height, width): a static graph's own, else the square of img_size."""
    height, width = exported.image_hw
    if isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0:
        return height, width
    side = img_size or DEFAULT_SIZE
    return side, side


def static_size(exported: ExportedFile) -> Optional[int]:
    """The input's longer side where a static graph fixes both; None where height or width is free."""
    height, width = exported.image_hw
    if isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0:
        return max(height, width)
    return None


def static_batch(exported: ExportedFile) -> Optional[int]:
    batch = exported.image_input.shape[0]
    return batch if isinstance(batch, int) and batch > 0 else None


def recipe_defaults(layout: ModuleType, exported: ExportedFile, reading=None) -> dict[str, Any]:
    """The layout's recipe (the file's own, where its reading found one beside it) as preprocess defaults; the
    input's element type is the file's own."""
    recipe = getattr(reading, "recipe", None) or layout.RECIPE
    return {"mean": list(recipe.mean), "std": list(recipe.std), "resize": recipe.resize,
            "resampler": recipe.resampler, "interpolation": recipe.interpolation, "channels": recipe.channels,
            "scale": recipe.scale, "pad_value": recipe.pad_value, "input_type": own_input_type(exported),
            "inset": recipe.inset}


def own_input_type(exported: ExportedFile) -> str:
    dtype = exported.image_input.dtype
    return dtype if dtype in INPUT_TYPES else "float32"


def defaults(source: str, model: Any = None) -> ArchDefaults:
    exported, layout, reading = read(source, head_of(model))
    imgsz = exported.metadata.get("imgsz")
    size = static_size(exported) or (max(imgsz) if isinstance(imgsz, (list, tuple)) and imgsz else DEFAULT_SIZE)
    preprocess = {"img_size": size, **recipe_defaults(layout, exported, reading)}
    evaluation = VALIDATION if layout.NMS else OWN_ROWS
    postprocess = {**DEPLOYED, "agnostic": bool(getattr(layout, "AGNOSTIC", False)), **getattr(layout, "DEPLOYED", {})}
    inapplicable = {} if layout.NMS else {"postprocess.agnostic": f"its layout {reading.layout} gives one row per "
                                                                 "object already, and no NMS follows its graph"}
    # int8 keeps the decode after the file's last convolutions in float (quantization.DECODE).
    return ArchDefaults(preprocess, postprocess, evaluation, keep_float=("decode",), inapplicable=inapplicable)


def unsupported_runtime(runtime, source: str = "") -> Optional[str]:
    path = Path(source)
    readers = [spec.name for spec in runtimes.reading(path.suffix)]
    if runtime.backend not in readers:
        kind = FORMATS.get(path.suffix, "such a file")
        return (f"runtime.backend {runtime.backend} cannot run {path.name or 'a file'} (model.file): the file is the "
                f"network, and {kind} is read by runtime.backend {' or '.join(readers)}")
    if quantizes(runtime.precision) and path.suffix == TFLITE_SUFFIX:
        return (f"runtime.precision {runtime.precision}: detbench quantizes an ONNX file, and a .tflite runs as it is "
                "(at runtime.precision fp32, whatever precision its weights are stored in). For an int8 TFLite "
                "file, quantize the model with onnx2tf (-oiqt, with -cind and your own calibration images) or "
                "TensorFlow's converter (a representative dataset of your images), then give that file at fp32")
    if quantizes(runtime.precision) and path.suffix != ONNX_SUFFIX:
        return (f"runtime.precision {runtime.precision} quantizes an ONNX file, not an IR: give the ONNX export as "
                "model.file, or run the IR at fp32 or bf16")
    return None


def reference_backend(source: str) -> str:
    """The file as exported, at fp32, on the runtime whose own format it is (its first file kind: ONNX Runtime for
    an ONNX file, LiteRT for a .tflite), else the first that reads it (an IR only OpenVINO reads)."""
    readers = runtimes.reading(Path(source).suffix)
    return next((spec for spec in readers if spec.file_kinds[0] == Path(source).suffix), readers[0]).name


def settings_problem(source: str, preprocess, batch_size: int) -> Optional[str]:
    """A static export's own input size and batch win over the config's: its graph cannot take others."""
    path = Path(source)
    exported = exported_file(source)
    fixed, batch = static_size(exported), static_batch(exported)
    if fixed is not None and preprocess.img_size != fixed:
        height, width = input_hw(exported, None)
        return (f"preprocess.img_size {preprocess.img_size}: model.file {path.name} is a static export "
                f"whose input is {height}x{width}, and the file's size wins (its graph cannot take another); remove "
                f"preprocess.img_size, or export the model with dynamic axes")
    given, own = getattr(preprocess, "input_type", None), own_input_type(exported)
    if given is not None and given != own and {given, own} & {"int8", "float16"}:
        return (f"preprocess.input_type {given}: model.file {path.name} takes {exported.image_input.dtype} "
                f"({exported.image_input.name}), and an int8 or float16 input is fed only as the file takes it; "
                "remove preprocess.input_type")
    if batch is not None and batch_size != batch:
        return (f"dataset.batch_size {batch_size}: model.file {path.name} is a static export that "
                f"takes batches of exactly {batch}, and the file's size wins (its graph cannot take another); set "
                f"dataset.batch_size {batch}, or export the model with a dynamic batch")
    return None


def smallest_input(source: str) -> int:
    return STRIDE


def input_size(preprocess) -> int:
    return preprocess.img_size


def largest_input_area(source: str, preprocess) -> int:
    height, width = input_hw(exported_file(source), preprocess.img_size)
    return height * width
