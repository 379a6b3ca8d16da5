"""The exported family: a detector given as a file (model.file). The file is the network: nothing is built or
loaded into torch; the runtimes read the file itself, and the first runtime that reads its kind, at fp32, is the
reference the verdicts compare with (its facts, the defaults read from the file, are in facts.py)."""
from __future__ import annotations

from typing import Any, Optional

import torch

from models.yolo import coco_names
from pipelines.boxes.nms import NmsSettings
from pipelines.contract import GraphTail, LoadedNetwork
from pipelines.exported.facts import (ARCHS, EVALUATION_PREPROCESS, FORWARD_TIMING, NAME, SIZE_KEYS,  # noqa: F401
                                      accepts, defaults, exported_file, head_of, input_hw, input_size,
                                      largest_input_area, read, reference_backend, settings_problem, smallest_input,
                                      unsupported_runtime)
from pipelines.exported.layouts import contract
from pipelines.exported.pipeline import Decode, ExportedPipeline
from pipelines.exported.preparing import InputForm, Prepare, Restore
from pipelines.exported.recipe import Recipe
from pipelines.exported.recipe_said import DecodeSettings, said_recipe
from pipelines.runtimes.base import PreparedForward


def memory_probe(network: LoadedNetwork, postprocess) -> Optional[tuple[torch.nn.Module, int]]:
    return None  # no torch module to probe: the runtime allocates what the file's graph needs


def load_network(source: str, weights: Optional[str], seed: int, model: Any = None) -> LoadedNetwork:
    """`weights` and `seed` do not apply: the file holds its weights."""
    exported, layout, reading = read(source, head_of(model))
    names = exported.names() or (list(reading.names) if reading.names else None)
    if names is None:
        names = coco_names() if reading.classes == 80 else [str(index) for index in range(reading.classes)]
    recipe = reading.recipe or layout.RECIPE
    plain_pixels = recipe.mean == (0.0, 0.0, 0.0) and recipe.std == (1.0, 1.0, 1.0)
    return LoadedNetwork(
        module=None, class_names=names, weights=f"file {exported.path.name} ({exported.format}, layout "
        f"{reading.layout}: {reading.why})", random_weights=False, cache_key=f"{NAME}:{exported.digest}",
        pixel_scale=recipe.scale if plain_pixels and exported.image_input.dtype == "float32" else None,
        arch=str(source), file=exported.path, reading=reading, channels_last=exported.channels_last,
        tail=GraphTail(exported.tail.operator, exported.tail.computed_inputs) if exported.tail else None,
        description={"file": str(exported.path), "format": exported.format, "digest": exported.digest,
                     "layout": reading.layout, "read_from": reading.why, "assumed": reading.assumed,
                     "classes": reading.classes,
                     "inputs": [_described(t) for t in exported.inputs],
                     "outputs": [_described(t) for t in exported.outputs],
                     **({"weights_stored_as": exported.precision} if exported.precision else {}),
                     "metadata_keys": sorted(exported.metadata)})


def _described(tensor) -> list:
    """name, shape, element type, and an integer tensor's [scale, zero point]."""
    return [tensor.name, list(tensor.shape), tensor.dtype] + ([list(tensor.quantization)] if tensor.quantization
                                                             else [])


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)


def recipe_of(preprocess) -> Recipe:
    return Recipe().with_keys({key: getattr(preprocess, key, None) for key in Recipe.__dataclass_fields__})


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess,
                   evaluation: bool = False) -> ExportedPipeline:
    """`evaluation` changes nothing: a file is scored as its exporter's predictor prepares images."""
    from pipelines.exported import layouts

    reading: contract.Reading = network.reading
    layout = layouts.layout(reading.layout)
    agnostic = getattr(postprocess, "agnostic", None)  # null: the layout's own
    decode = Decode(layout, reading, NmsSettings(
        postprocess.conf_thres, postprocess.iou_thres, getattr(postprocess, "classes", None),
        agnostic=getattr(layout, "AGNOSTIC", False) if agnostic is None else agnostic,
        multi_label=getattr(postprocess, "multi_label", False) or getattr(layout, "MULTI_LABEL", False),
        max_det=postprocess.max_det))
    exported = exported_file(network.arch)
    target = input_hw(exported, preprocess.img_size)
    pixels = forward.input_dtype == torch.uint8
    recipe = recipe_of(preprocess)
    form = InputForm(exported.channels_last, exported.image_input.quantization)
    prepare = Prepare(recipe, target, reading.extra_inputs, pixels=pixels, form=form)
    restore = Restore(layout.BOXES == contract.INPUT, clip=getattr(layout, "CLIP", True))
    nms = decode.nms.settings
    yours = [f"{section}.{key}" for section, keys in (("preprocess", preprocess), ("postprocess", postprocess))
             for key in getattr(keys, "model_fields_set", ())]
    said = said_recipe(exported, layout, reading, recipe, target, DecodeSettings(
        nms.conf_thres, nms.iou_thres, nms.max_det, nms.agnostic, nms.multi_label, restore.clip), yours)
    return ExportedPipeline(forward, network.class_names, prepare, decode, restore, said)
