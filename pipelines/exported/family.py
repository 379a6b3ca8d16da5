"""The exported family: a detector given as a file (model.file). The file is the network: nothing is built or
loaded into torch; the runtimes read the file itself, and ONNX Runtime (an ONNX file) or OpenVINO (an IR) at
fp32 is the reference the verdicts compare with (its facts, the defaults read from the file, are in facts.py)."""
from __future__ import annotations

from typing import Optional

import torch

from models.yolo import coco_names
from pipelines.contract import LoadedNetwork
from pipelines.exported.facts import (ARCHS, EVALUATION_PREPROCESS, FORWARD_TIMING, NAME, SIZE_KEYS,  # noqa: F401
                                      accepts, defaults, input_size, largest_input_area, read, settings_problem,
                                      reference_backend, smallest_input, unsupported_runtime)
from pipelines.exported.pipeline import Decode, ExportedPipeline, Stretch, Unstretch, letterbox
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo.stages import PIXEL_SCALE, ScaleBoxes


def memory_probe(network: LoadedNetwork, postprocess) -> Optional[tuple[torch.nn.Module, int]]:
    return None  # no torch module to probe: the runtime allocates what the file's graph needs


def load_network(source: str, weights: Optional[str], seed: int) -> LoadedNetwork:
    """`weights` and `seed` do not apply: the file holds its weights."""
    exported, found = read(source)
    names = exported.names()
    if names is None:
        names = coco_names() if found.classes == 80 else [str(index) for index in range(found.classes)]
    letterboxed_pixels = found.layout.letterboxed
    return LoadedNetwork(
        module=None, class_names=names, weights=f"file {exported.path.name} ({exported.format}, layout "
        f"{found.layout.value}: {found.why})", random_weights=False, cache_key=f"{NAME}:{exported.digest}",
        pixel_scale=PIXEL_SCALE if letterboxed_pixels else None, arch=str(source), file=exported.path,
        description={"file": str(exported.path), "format": exported.format, "digest": exported.digest,
                     "layout": found.layout.value, "read_from": found.why, "classes": found.classes,
                     "inputs": [[t.name, list(t.shape)] for t in exported.inputs],
                     "outputs": [[t.name, list(t.shape)] for t in exported.outputs],
                     "metadata_keys": sorted(exported.metadata)})


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess,
                   evaluation: bool = False) -> ExportedPipeline:
    """`evaluation` changes nothing: a file is scored as its exporter's predictor prepares images."""
    _, found = read(network.arch)
    decode = Decode(found, postprocess.conf_thres, postprocess.iou_thres, postprocess.max_det,
                    multi_label=getattr(postprocess, "multi_label", False))
    if found.layout.letterboxed:
        pre, restore = letterbox(preprocess.img_size, forward.input_dtype == torch.uint8), ScaleBoxes()
    else:
        pre, restore = Stretch(preprocess.img_size, preprocess.mean, preprocess.std), Unstretch()
    return ExportedPipeline(forward, network.class_names, pre, decode, restore)

