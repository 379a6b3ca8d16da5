"""The YOLO family: how it loads its networks' weights and how its pipeline is put together (its facts, the
architectures it builds and the keys it reads, are in facts.py)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from datasets.image_folder import BUNDLED_SAMPLES, decode_image, find_images
import models.random_weights
from models import Detect, build_model, fuse_model, load_weights
from models.random_weights import calibrate_batchnorm, calibrate_detect_head, candidate_target
from pipelines.cache_keys import default_cache_dir, file_digest, parts_digest, state_digest
from pipelines.contract import LoadedNetwork
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo.facts import (ARCHS, EVALUATION_PREPROCESS, FORWARD_TIMING, NAME, SIZE_KEYS,  # noqa: F401
                                  accepts, defaults, input_size, largest_input_area, settings_problem, smallest_input,
                                  reference_backend, unsupported_runtime)
from pipelines.yolo.pipeline import YoloPipeline
from pipelines.boxes.nms import NmsSettings, NonMaxSuppression
from pipelines.yolo.stages import PIXEL_SCALE, Preprocess, ScaleBoxes

CALIBRATION_SIZE = 256
# seed and structure -> (calibrated state_dict, its digest), so a second copy in the same process is cheap
_calibrated: dict[str, tuple[dict[str, torch.Tensor], str]] = {}


def memory_probe(network: LoadedNetwork, postprocess) -> tuple[torch.nn.Module, int]:
    return network.module, 0  # every layer's output is a feature map of the input


def load_network(arch: str, weights: str | None, seed: int, model: Any = None) -> LoadedNetwork:
    model = build_model(arch, seed=seed)
    structure = f"{NAME}:{Path(model.yaml_file).name}:{file_digest(model.yaml_file)}"
    if weights:
        info = load_weights(model, weights)
        names = list(info.class_names or model.names)
        return LoadedNetwork(model, names, info.source, random_weights=False,
                             cache_key=f"{structure}:weights-{file_digest(weights)}", fuse=fuse_model,
                             pixel_scale=PIXEL_SCALE)
    seeded = f"{structure}:random-seed-{seed}"
    if seeded not in _calibrated:
        path = _calibrated_path(seeded)
        state = _read_calibrated(path, model)
        if state is None:
            level_maps = calibrate_batchnorm(model, _calibration_batch(int(max(model.stride))))
            head = model.model[-1]
            if isinstance(head, Detect):
                calibrate_detect_head(head, level_maps, candidate_target(level_maps))
            state = {name: value.clone() for name, value in model.state_dict().items()}
            _write_calibrated(path, state)
        _calibrated[seeded] = (state, state_digest(state))
    state, digest = _calibrated[seeded]
    model.load_state_dict(state)
    # The digest of the weights themselves: a change in how random weights are made never reuses an export.
    return LoadedNetwork(model, list(model.names), f"random (seed {seed})", random_weights=True,
                         cache_key=f"{seeded}:{digest}", fuse=fuse_model, pixel_scale=PIXEL_SCALE)


def _calibrated_path(seeded: str) -> Path:
    """Calibrated random weights on disk, keyed by everything they are made from: the structure and seed, the
    calibration photos and size, the calibration code and torch (whose initialisers draw the random numbers)."""
    parts = {"network": seeded, "size": str(CALIBRATION_SIZE), "torch": torch.__version__,
             "calibration": file_digest(models.random_weights.__file__),
             "photos": ",".join(file_digest(path) for path in find_images(BUNDLED_SAMPLES))}
    return default_cache_dir() / "calibrated" / f"{parts_digest(parts)}.pt"


def _read_calibrated(path: Path, model: torch.nn.Module) -> dict[str, torch.Tensor] | None:
    """The cached state when it loads into `model`; None when missing or unreadable, so it is rebuilt."""
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    except Exception:  # a truncated or foreign file: torch raises several types, each means "calibrate again"
        return None
    return state


def _write_calibrated(path: Path, state: dict[str, torch.Tensor]) -> None:
    """Atomically; a cache that cannot be written only costs the next run its calibration."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            torch.save(state, stream)
        os.replace(temporary, path)
    except OSError:
        pass
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _calibration_batch(stride: int) -> torch.Tensor:
    """The bundled sample photos, letterboxed: the same images for every run, so random weights stay a
    function of the seed alone."""
    preprocess = Preprocess(CALIBRATION_SIZE, rect=False, pad_value=114, stride=stride)
    return preprocess([decode_image(path).image for path in find_images(BUNDLED_SAMPLES)]).tensor


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess,
                   evaluation: bool = False) -> YoloPipeline:
    """`preprocess` and `postprocess` are the config's sections of the same names. `evaluation`: letterbox as
    YOLOv7's test.py does for mAP, not as deployed (`preprocess.rect` does not apply)."""
    stride = int(max(network.module.stride))
    return YoloPipeline(
        forward, network.class_names,
        Preprocess(preprocess.img_size, preprocess.rect, preprocess.pad_value, stride, evaluation,
                   pixels=forward.input_dtype == torch.uint8),
        NonMaxSuppression(NmsSettings(postprocess.conf_thres, postprocess.iou_thres, postprocess.classes,
                                      postprocess.agnostic, getattr(postprocess, "multi_label", False),
                                      postprocess.max_det)),
        ScaleBoxes(),
    )
