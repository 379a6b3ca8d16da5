"""What the exported family states about itself: a detector given as a file (`model.file`, an ONNX file or an
OpenVINO IR), whose network is the file. Its defaults come from the file: the input size of a static graph (or
the metadata's imgsz), the exporter's own predict settings (Ultralytics': conf 0.25, IoU 0.7, 300 kept), and
normalisation by layout. Light: the file is read (inspection.py) only when a config names one."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

from pydantic import BaseModel

from pipelines.exported.inspection import FILE_SUFFIXES, ONNX_SUFFIX, PICKLE_SUFFIXES, ExportedFile, read_exported
from pipelines.exported.layouts import Layout, ReadLayout, read_layout
from pipelines.settings import ArchDefaults, Evaluation, ForwardTiming

NAME = "exported"
ARCHS: tuple[str, ...] = ()  # any file: model.file names it
ARCH_FILES = FILE_SUFFIXES
ARCH_FILE_TEXT = "an exported detector file (.onnx, or an OpenVINO IR's .xml) given as model.file"
STRIDE = 32  # YOLO exports' largest stride; the input size is the file's own where its graph fixes it
SIZE_KEYS = ("img_size",)
OUTPUT_LAYOUT = "the file's own: one of the layouts in pipelines/exported/layouts.py"
EVALUATION_PREPROCESS = None  # scored as deployed: the exporter's own predictor's preprocessing
FORWARD_TIMING = ForwardTiming.WHOLE
DEFAULT_SIZE = 640  # a dynamic file without metadata: Ultralytics' default export size
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
# Ultralytics' predict defaults (conf 0.25, IoU 0.7, 300 kept, class-aware) and its val protocol (conf 0.001).
DEPLOYED = {"conf_thres": 0.25, "iou_thres": 0.7, "max_det": 300}
VALIDATION = Evaluation(0.001, 0.7, 300, True, "Ultralytics' val: conf 0.001, IoU 0.7, 300 per image, every class "
                                               "per box; scored by COCOeval")
OWN_CUT = Evaluation(0.0, 0.7, 300, None, "the file's own: its graph holds NMS and a score cut, so every row it "
                                          "returns is scored; not comparable with a plain export's mAP")


class Preprocess(BaseModel):
    """No key of its own: the input size and normalisation are the shared keys."""


class Postprocess(BaseModel):
    """No key of its own."""


HEAD_MARK = "#"  # model.network joins model.file and model.head as FILE#HEAD when a head is given


def split_source(source: str) -> tuple[str, Optional[str]]:
    """(the file, model.head or None) of a model.network string."""
    path, mark, head = str(source).rpartition(HEAD_MARK)
    return (path, head) if mark and head in {layout.value for layout in Layout} else (str(source), None)


def accepts(source: str) -> bool:
    return Path(split_source(source)[0]).suffix in FILE_SUFFIXES + PICKLE_SUFFIXES


@lru_cache(maxsize=8)
def _file(source: str) -> ExportedFile:
    return read_exported(source)


def read(source: str) -> tuple[ExportedFile, ReadLayout]:
    """The file and its layout (model.head decides where given), read once per process; the file is never
    written."""
    path, head = split_source(source)
    exported = _file(path)
    return exported, read_layout(exported, head)


def static_size(exported: ExportedFile) -> Optional[int]:
    """The input side a static graph fixes; None where height or width is free."""
    height, width = exported.image_input.shape[2:]
    return height if isinstance(height, int) and isinstance(width, int) and height > 0 else None


def static_batch(exported: ExportedFile) -> Optional[int]:
    batch = exported.image_input.shape[0]
    return batch if isinstance(batch, int) and batch > 0 else None


def defaults(source: str) -> ArchDefaults:
    exported, found = read(source)
    imgsz = exported.metadata.get("imgsz")
    size = static_size(exported) or (max(imgsz) if isinstance(imgsz, (list, tuple)) and imgsz else DEFAULT_SIZE)
    detr = found.layout == Layout.DETR
    preprocess = {"img_size": size, "mean": IMAGENET_MEAN if detr else [0.0] * 3, "std": IMAGENET_STD if detr
                  else [1.0] * 3}
    evaluation = VALIDATION if found.layout.suppresses else OWN_CUT
    # int8 keeps the decode after the file's last convolutions in float (quantization.DECODE).
    return ArchDefaults(preprocess, dict(DEPLOYED), evaluation, keep_float=("decode",))


def unsupported_runtime(runtime, source: str = "") -> Optional[str]:
    if runtime.backend == "torch":
        return ("runtime.backend torch has no network to run for a file (model.file): the file is the network; use "
                "runtime.backend onnxruntime (an ONNX file) or openvino (ONNX or IR)")
    path = Path(split_source(source)[0])
    if runtime.backend == "onnxruntime" and path.suffix != ONNX_SUFFIX:
        return (f"runtime.backend onnxruntime cannot read an OpenVINO IR ({path.name}); use runtime.backend "
                "openvino, or give the ONNX file as model.file")
    if runtime.precision == "int8" and path.suffix != ONNX_SUFFIX:
        return ("runtime.precision int8 quantizes an ONNX file (on ONNX Runtime or OpenVINO), not an IR: give the "
                "ONNX export as model.file, or run the IR at fp32 or bf16")
    return None


def reference_backend(source: str) -> str:
    """The file as exported, at fp32: ONNX Runtime reads an ONNX file, OpenVINO an IR (which ONNX Runtime cannot)."""
    return "onnxruntime" if Path(split_source(source)[0]).suffix == ONNX_SUFFIX else "openvino"


def settings_problem(source: str, config) -> Optional[str]:
    """A static export's own input size and batch win over the config's: its graph cannot take others."""
    path = Path(split_source(source)[0])
    exported = _file(str(path))
    fixed, batch = static_size(exported), static_batch(exported)
    if fixed is not None and config.preprocess.img_size != fixed:
        return (f"preprocess.img_size {config.preprocess.img_size}: model.file {path.name} is a static export "
                f"whose input is {fixed}x{fixed}, and the file's size wins (its graph cannot take another); remove "
                f"preprocess.img_size, or export the model with dynamic=True")
    if batch is not None and config.dataset.batch_size != batch:
        return (f"dataset.batch_size {config.dataset.batch_size}: model.file {path.name} is a static export that "
                f"takes batches of exactly {batch}, and the file's size wins (its graph cannot take another); set "
                f"dataset.batch_size {batch}, or export the model with dynamic=True")
    return None


def smallest_input(source: str) -> int:
    return STRIDE


def input_size(preprocess) -> int:
    return preprocess.img_size


def largest_input_area(source: str, preprocess) -> int:
    return preprocess.img_size ** 2
