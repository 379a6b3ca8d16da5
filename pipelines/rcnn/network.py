"""torchvision's two-stage detectors as detbench runs them: built by torchvision's builders, without downloads,
split at the transform's two ends so that preprocessing and postprocessing are pipeline stages of their own."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Optional

import torch
from torch import nn
from torchvision.models import detection
from torchvision.models.detection.generalized_rcnn import GeneralizedRCNN
from torchvision.models.detection.image_list import ImageList

from models import CheckpointError
from pipelines.rcnn.facts import ARCHS
from utils.bounded_text import LIMIT, clipped

# The COCO category list of torchvision's published weights (index = the model's label; "N/A" for the ids
# COCO leaves unused). Read from the builders' metadata, which needs no download.
COCO_CATEGORIES = list(detection.FasterRCNN_ResNet50_FPN_Weights.COCO_V1.meta["categories"])
# A training counter of BatchNorm, absent from checkpoints saved with FrozenBatchNorm2d; eval never reads it.
_IGNORED_KEY_SUFFIX = "num_batches_tracked"


class TwoStageNetwork(nn.Module):
    """GeneralizedRCNN's forward between its transform's two ends: backbone -> rpn -> roi_heads, on a padded
    batch tensor, returning per image the dict of boxes, labels, scores (and masks) in the resized input's
    pixels. The parts are torchvision's own modules, so the state_dict keys are torchvision's."""

    def __init__(self, model: GeneralizedRCNN):
        super().__init__()
        self.backbone = model.backbone
        self.rpn = model.rpn
        self.roi_heads = model.roi_heads

    def forward(self, tensors: torch.Tensor,
                image_sizes: Optional[list[tuple[int, int]]] = None) -> list[dict[str, torch.Tensor]]:
        """`image_sizes`: each image's size inside the padded batch; None: every image fills it."""
        if image_sizes is None:
            image_sizes = [(int(tensors.shape[-2]), int(tensors.shape[-1]))] * int(tensors.shape[0])
        features = self.backbone(tensors)
        if isinstance(features, torch.Tensor):
            features = OrderedDict([("0", features)])
        proposals, _ = self.rpn(ImageList(tensors, image_sizes), features)
        detections, _ = self.roi_heads(features, proposals, image_sizes)
        return detections


def build_detector(arch: str, seed: int) -> GeneralizedRCNN:
    """torchvision's model with seeded random initialisation; never downloads (no weights of any kind)."""
    if arch not in ARCHS:
        raise ValueError(f"{arch!r} is not one of {', '.join(ARCHS)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = getattr(detection, arch)(weights=None, weights_backbone=None)
    return model.eval()


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
