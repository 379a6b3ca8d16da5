"""What every torchvision detector needs for its weights: building the model without downloads, reading a
user's state_dict in torchvision's own checkpoint format, the COCO categories its published weights use, and
the photos random weights are calibrated on."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import torch
from torch import nn
from torchvision.models import detection

from datasets.image_folder import BUNDLED_SAMPLES, decode_image, find_images
from models import CheckpointError
from pipelines.cache_keys import file_digest, state_digest
from pipelines.contract import LoadedNetwork
from utils.core.bounded_text import LIMIT, clipped

# The COCO category list of torchvision's published weights (index = the model's label; "N/A" for the ids
# COCO leaves unused). Read from the builders' metadata, which needs no download.
COCO_CATEGORIES = list(detection.FasterRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"])
# A training counter of BatchNorm, absent from checkpoints saved with FrozenBatchNorm2d; eval never reads it.
_IGNORED_KEY_SUFFIX = "num_batches_tracked"
_random_states: dict[str, tuple[dict[str, torch.Tensor], str]] = {}  # family:arch:seed -> (state, digest)


def build_detector(arch: str, seed: int) -> nn.Module:
    """torchvision's model with seeded random initialisation; never downloads (no weights of any kind)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(detection, arch)(weights=None, weights_backbone=None)
    return model.eval()


def loaded_network(family: str, arch: str, network: nn.Module, weights: Optional[str], seed: int,
                   spread: Callable[[], None]) -> LoadedNetwork:
    """`network` (built from the seeded builder) with a user's torchvision checkpoint, or with its random weights
    spread by `spread()` so that they detect something: once per process for each family, arch and seed, the
    same weights for every copy after."""
    if weights:
        load_state_dict_file(network, weights, arch)
        return LoadedNetwork(network, list(COCO_CATEGORIES), f"checkpoint {Path(weights).name}",
                             random_weights=False, cache_key=f"{family}:{arch}:weights-{file_digest(weights)}",
                             arch=arch)
    key = f"{family}:{arch}:random-seed-{seed}"
    if key not in _random_states:
        spread()
        state = {name: value.clone() for name, value in network.state_dict().items()}
        _random_states[key] = (state, state_digest(state))
    state, digest = _random_states[key]
    network.load_state_dict(state)
    return LoadedNetwork(network, list(COCO_CATEGORIES), f"random (seed {seed}, spread to detect)",
                         random_weights=True, cache_key=f"{key}:{digest}", arch=arch)


def calibration_photos() -> list:
    """The bundled sample photos, the same for every run, so random weights stay a function of the seed."""
    return [decode_image(path).image for path in find_images(BUNDLED_SAMPLES)]



def load_state_dict_file(model: nn.Module, path: str, arch: str) -> None:
    """A published torchvision checkpoint (a plain state_dict, read with weights_only: no code from the file
    runs) into `model`, every key and shape checked; CheckpointError says what does not fit."""
    shown_path = clipped(str(path), LIMIT)
    if Path(path).is_dir():
        raise CheckpointError(f"model.weights {shown_path} is a folder, not a file; set model.weights to the .pth "
                              f"checkpoint file of {arch} itself")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"model.weights {shown_path}: no such file; set model.weights to a torchvision "
                              f"checkpoint of {arch} (docs/models.md says where they are published)") from None
    except Exception as error:
        raise CheckpointError(f"model.weights {shown_path}: not a state_dict torch can load safely "
                              f"({type(error).__name__}: {error}); use the .pth file torchvision publishes for "
                              f"{arch}") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"model.weights {shown_path}: holds a {type(state).__name__}, not a plain state_dict "
                              f"(a mapping of parameter names to tensors) as torchvision publishes for {arch}")
    problem = state_dict_mismatch(model.state_dict(), state)
    if problem:
        raise CheckpointError(f"model.weights {shown_path} does not fit model.arch {arch}: {problem}; use the "
                              f"checkpoint published for {arch} (see docs/models.md) or set model.arch to the "
                              "architecture the file was saved from")
    model.load_state_dict(state, strict=False)


def state_dict_mismatch(expected: dict[str, torch.Tensor], given: dict[str, torch.Tensor]) -> str:
    """What keeps `given` from loading strictly into a model whose state_dict is `expected`; '' if nothing."""
    wanted = {k for k in expected if not k.endswith(_IGNORED_KEY_SUFFIX)}
    offered = {k for k in given if not k.endswith(_IGNORED_KEY_SUFFIX)}
    missing, unexpected = sorted(wanted - offered), sorted(offered - wanted)
    reshaped = sorted(k for k in wanted & offered if tuple(expected[k].shape) != tuple(given[k].shape))
    parts = []
    if missing:
        parts.append(f"{len(missing)} key(s) missing (e.g. {', '.join(missing[:3])})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected key(s) (e.g. {', '.join(unexpected[:3])})")
    if reshaped:
        parts.append(f"{len(reshaped)} of another shape (e.g. {reshaped[0]}: file "
                     f"{tuple(given[reshaped[0]].shape)}, model {tuple(expected[reshaped[0]].shape)})")
    return "; ".join(parts)
