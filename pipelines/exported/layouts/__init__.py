"""The output layouts exported detectors come in: one module each in this folder (contract.py says what a module
states), found here by name, so adding a layout is adding its module. A file's layout is the one whose
signature reads it most surely: `model.head` names it where the file leaves it open."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Optional

from pipelines.exported.inspection import ExportedFile, ExportedFileError
from pipelines.exported.layouts.contract import ASSUMED, NAMED, POSSIBLE, Misfit, Reading, shapes

NOT_LAYOUTS = {"contract"}
REFUSED_TASKS = {"segment": "a segmentation export", "pose": "a pose export", "obb": "an oriented-box export",
                 "classify": "a classification export"}
ADDING = "docs/models.md#adding-a-layout"
FED = ("float32", "float16", "uint8", "int8")  # the image input types detbench feeds


def names() -> tuple[str, ...]:
    """Every layout, by module name; found without importing them (the config lists them)."""
    return tuple(sorted(info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)])
                        if info.name not in NOT_LAYOUTS))


@lru_cache(maxsize=None)
def layout(name: str) -> ModuleType:
    if name not in names():
        raise ExportedFileError(f"model.head {name!r} is not a layout detbench knows; use one of {', '.join(names())}")
    return importlib.import_module(f"{__name__}.{name}")


def read_layout(file: ExportedFile, head: Optional[str] = None) -> Reading:
    """The file's layout: `head` (model.head) when given, else the one layout whose signature reads the file (a
    surest reading wins). Refuses what is not a detector's output, and a file two
    layouts read alike, naming each reading and the key that chooses."""
    _refuse_what_is_no_detector(file)
    if head is not None:
        answer = layout(head).read(file)
        if isinstance(answer, Misfit):
            raise ExportedFileError(f"model.head {head} does not fit model.file {file.path}: {answer.reason}; "
                                    f"outputs {shapes(file.outputs)}. Set model.head to a layout that fits, or "
                                    "leave it out")
        return replace(answer, why=f"model.head ({answer.why})", confidence=NAMED)
    answers = {name: layout(name).read(file) for name in names()}
    readings = [answer for answer in answers.values() if isinstance(answer, Reading) and answer.confidence > POSSIBLE]
    surest = max((reading.confidence for reading in readings), default=ASSUMED)
    chosen = [reading for reading in readings if reading.confidence == surest]
    if len(chosen) == 1:
        return chosen[0]
    if chosen:
        listed = "; ".join(f"`{reading.layout}`: {reading.why}" for reading in chosen)
        raise ExportedFileError(f"model.file {file.path}: outputs {shapes(file.outputs)} could be more than one "
                                f"layout ({listed}); set model.head to the one its exporter wrote (see "
                                "docs/models.md for each layout's exporter)")
    if len(file.outputs) == 1 and len(file.outputs[0].shape) == 2 and len(file.inputs) == 1:
        raise ExportedFileError(f"model.file {file.path}: output {shapes(file.outputs)} is one score per class per "
                                "image, a classification model's; detbench runs detectors")
    names_said = file.names()
    told = f"; its metadata names {len(names_said)} classes" if names_said else ""
    raise ExportedFileError(f"model.file {file.path}: inputs {shapes(file.inputs)} and outputs {shapes(file.outputs)}"
                            f"{told} match no layout detbench knows ({', '.join(names())}); see {ADDING}")


def _refuse_what_is_no_detector(file: ExportedFile) -> None:
    task = str(file.metadata.get("task", "detect"))
    if task in REFUSED_TASKS:
        raise ExportedFileError(f"model.file {file.path} is {REFUSED_TASKS[task]} (its metadata says task: {task}), "
                                f"not a detector's; outputs {shapes(file.outputs)}. Export a detection model")
    image = file.image_input
    # A named channel axis (optimum writes `num_channels`) is fed 3 channels like any other free axis.
    channels = image.shape[1] if len(image.shape) == 4 else None
    if len(image.shape) != 4 or not (file.channels_last or channels == 3 or isinstance(channels, str)):
        raise ExportedFileError(f"model.file {file.path}: its input {image.name} {list(image.shape)} is not a batch "
                                "of 3-channel images, (batch, 3, height, width) or (batch, height, width, 3); export "
                                "it with such an input")
    if image.dtype not in FED:
        raise ExportedFileError(f"model.file {file.path}: its input {image.name} takes {image.dtype}; detbench feeds "
                                f"an image as {', '.join(FED)} (int8 quantized with the file's own scale and zero "
                                "point): export the model with one of those input types")
    if image.dtype == "int8" and image.quantization is None:
        raise ExportedFileError(f"model.file {file.path}: its int8 input {image.name} carries no scale and zero "
                                "point, so nothing says which integer stands for which value; export it with its "
                                "input's quantization (TFLite's converter writes it), or with a float32 input")
    if any(len(t.shape) == 4 for t in file.outputs):
        raise ExportedFileError(f"model.file {file.path}: outputs {shapes(file.outputs)} hold a map (mask "
                                "prototypes or heatmaps): a segmentation or pose export, not a detector's. Export a "
                                "detection model")
