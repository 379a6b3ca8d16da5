"""The YOLO family: which architectures it builds, how it loads their weights, how its pipeline is put together."""
from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from models import build_model, fuse_model, load_weights
from models.yolo import BUILTIN_ARCHS
from pipelines.contract import LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo.pipeline import YoloPipeline
from pipelines.yolo.stages import NonMaxSuppression, Preprocess, ScaleBoxes

NAME = "yolo"
ARCHS = BUILTIN_ARCHS


def accepts(arch: str) -> bool:
    """The builtin YOLOv7 definitions, or a model-definition file in the YOLOv7 cfg format."""
    return arch in BUILTIN_ARCHS or Path(arch).suffix in (".yaml", ".yml")


def _digest(path: str | Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()[:16]


def load_network(arch: str, weights: str | None, seed: int) -> LoadedNetwork:
    model = build_model(arch, seed=seed)
    structure = f"{NAME}:{Path(model.yaml_file).name}:{_digest(model.yaml_file)}"
    if weights:
        info = load_weights(model, weights)
        names = list(info.class_names or model.names)
        return LoadedNetwork(model, names, info.source, random_weights=False,
                             cache_key=f"{structure}:weights-{_digest(weights)}", fuse=fuse_model)
    return LoadedNetwork(model, list(model.names), f"random (seed {seed})", random_weights=True,
                         cache_key=f"{structure}:random-seed-{seed}", fuse=fuse_model)


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess) -> YoloPipeline:
    """`preprocess` and `postprocess` are the config's sections of the same names."""
    stride = int(max(network.module.stride))
    return YoloPipeline(
        forward, network.class_names,
        Preprocess(preprocess.img_size, preprocess.rect, preprocess.pad_value, stride),
        NonMaxSuppression(postprocess.conf_thres, postprocess.iou_thres, postprocess.max_det, postprocess.classes,
                          postprocess.agnostic),
        ScaleBoxes(),
    )
