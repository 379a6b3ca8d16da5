"""The R-CNN family: torchvision's Faster R-CNN and Mask R-CNN builders, their published checkpoints, and how
their pipeline is put together (its facts, the architectures and the keys it reads, are in facts.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import torch

from datasets.image_folder import BUNDLED_SAMPLES, decode_image, find_images
from models.calibration import calibrate_batchnorm
from pipelines.cache_keys import file_digest, state_digest
from pipelines.contract import LoadedNetwork
from pipelines.rcnn import network as rcnn
from pipelines.rcnn.facts import (ARCHS, EVALUATION_PREPROCESS, NAME, SIZE_KEYS, accepts,  # noqa: F401
                                  input_size, largest_input_area, unsupported_runtime)
from pipelines.rcnn.pipeline import RcnnPipeline
from pipelines.rcnn.stages import Postprocess, Preprocess
from pipelines.runtimes.base import PreparedForward

CALIBRATION_SIZES = (160, 256)  # min_size, max_size of the bundled photos the random backbone is calibrated on
# Random classifier weights scaled up this much: at torchvision's initialisation every class scores about
# 1/91, below box_score_thresh, so no box would reach NMS or the mask branch and postprocessing would do none
# of the work it does with trained weights. Scaled, scores spread and detections_per_img boxes remain.
CLASSIFIER_SCALE = 10.0
_random_states: dict[str, tuple[dict[str, torch.Tensor], str]] = {}  # (arch, seed) -> (state, digest)


def memory_probe(network: LoadedNetwork, postprocess) -> tuple[torch.nn.Module, int]:
    """The backbone's feature maps grow with the input; the heads' tensors grow with the boxes they take, counted
    here from their shapes (a forward of the heads costs seconds even at 64 pixels). Each head's input and one
    layer's output are counted as alive together."""
    module: rcnn.TwoStageNetwork = network.module
    heads = module.roi_heads
    channels, floats = module.backbone.out_channels, 4
    representation = [m.out_features for m in heads.box_head.modules() if hasattr(m, "out_features")][-1]
    pooled = channels * _area(heads.box_roi_pool.output_size)
    proposals = postprocess.rpn_post_nms_top_n
    heads_bytes = proposals * (2 * pooled + 2 * representation) * floats
    if heads.has_mask():
        mask_side = 2 * heads.mask_roi_pool.output_size[0]  # the mask head upsamples its pooled features twice
        per_box = 2 * channels * _area(heads.mask_roi_pool.output_size) + (channels + len(rcnn.COCO_CATEGORIES)) \
            * mask_side * mask_side
        heads_bytes += postprocess.detections_per_img * per_box * floats
    return module.backbone, heads_bytes


def _area(size) -> int:
    return size[0] * size[1] if isinstance(size, (list, tuple)) else size * size


def load_network(arch: str, weights: Optional[str], seed: int) -> LoadedNetwork:
    model = rcnn.build_detector(arch, seed)
    network = rcnn.TwoStageNetwork(model).eval()
    if weights:
        rcnn.load_state_dict_file(network, weights, arch)
        return LoadedNetwork(network, list(rcnn.COCO_CATEGORIES), f"checkpoint {Path(weights).name}",
                             random_weights=False, cache_key=f"{NAME}:{arch}:weights-{file_digest(weights)}")
    key = f"{NAME}:{arch}:random-seed-{seed}"
    if key not in _random_states:
        _spread_random_weights(model)
        state = {name: value.clone() for name, value in network.state_dict().items()}
        _random_states[key] = (state, state_digest(state))
    state, digest = _random_states[key]
    network.load_state_dict(state)
    return LoadedNetwork(network, list(rcnn.COCO_CATEGORIES), f"random (seed {seed})", random_weights=True,
                         cache_key=f"{key}:{digest}")


def _spread_random_weights(model) -> None:
    """BatchNorm statistics of the backbone measured on the bundled photos (see models.calibration), then the
    classifier scaled (CLASSIFIER_SCALE): random weights whose boxes clear torchvision's score threshold."""
    preprocess = Preprocess(*CALIBRATION_SIZES)
    batch = preprocess([decode_image(path).image for path in find_images(BUNDLED_SAMPLES)]).images.tensors
    calibrate_batchnorm(model.backbone, batch)
    with torch.no_grad():
        model.roi_heads.box_predictor.cls_score.weight.mul_(CLASSIFIER_SCALE)


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.min_size, preprocess.min_size)


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess,
                   evaluation: bool = False) -> RcnnPipeline:
    """`preprocess` and `postprocess` are the config's sections of the same names. `evaluation` changes nothing:
    torchvision evaluates its COCO mAP through the same transform it deploys."""
    module: rcnn.TwoStageNetwork = network.module
    module.roi_heads.score_thresh = postprocess.box_score_thresh
    module.roi_heads.nms_thresh = postprocess.box_nms_thresh
    module.roi_heads.detections_per_img = postprocess.detections_per_img
    module.rpn._pre_nms_top_n["testing"] = postprocess.rpn_pre_nms_top_n
    module.rpn._post_nms_top_n["testing"] = postprocess.rpn_post_nms_top_n
    pre = Preprocess(preprocess.min_size, preprocess.max_size)
    return RcnnPipeline(forward, module, network.class_names, pre, Postprocess(pre.transform))
