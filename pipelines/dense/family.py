"""The dense family: torchvision's RetinaNet, FCOS, SSD and SSDlite builders, their published checkpoints, random
weights spread so that they detect something, and how their pipeline is put together (its facts, the
architectures and the keys it reads, are in facts.py)."""
from __future__ import annotations

import statistics
from typing import Any, Optional

import torch

from models.random_weights import CANDIDATE_SHARE, bisect_shift, calibrate_batchnorm
from pipelines.contract import LoadedNetwork
from pipelines.dense.facts import (ARCHS, BUILDERS, EVALUATION_PREPROCESS, FORWARD_TIMING, NAME,  # noqa: F401
                                   SIZE_KEYS, accepts, defaults, input_size, largest_input_area, settings_problem,
                                   smallest_input, reference_backend, unsupported_runtime)
from pipelines.dense.network import Decode, DenseNetwork, LevelSizes, classification_convs
from pipelines.dense.pipeline import DensePipeline
from pipelines.runtimes.base import PreparedForward
from pipelines.torchvision_common.facts import DEPLOYED_CONF_THRES
from pipelines.torchvision_common.transform import Postprocess, Preprocess, TransformSettings
from pipelines.torchvision_common.weights import build_detector, calibration_photos, loaded_network

CALIBRATION_SIZES = (192, 320)  # min_size, max_size of the bundled photos random weights are calibrated on
# Random class logits are centred and given this spread before the shift: at torchvision's initialisation they
# are nearly constant (RetinaNet's prior bias puts every score near 0.01, FCOS's near 0.07), under any cut.
CLASS_LOGIT_STD = 1.0


def memory_probe(network: LoadedNetwork, postprocess) -> tuple[torch.nn.Module, int]:
    return network.module, 0  # every layer's output is a feature map of the input


def load_network(arch: str, weights: Optional[str], seed: int, model: Any = None) -> LoadedNetwork:
    network = DenseNetwork(build_detector(arch, seed)).eval()
    return loaded_network(NAME, arch, network, weights, seed, lambda: _spread_random_weights(network, arch))


def _spread_random_weights(network: DenseNetwork, arch: str) -> None:
    """BatchNorm statistics measured on the bundled photos (see models.random_weights); then the class logits
    centred and spread (CLASS_LOGIT_STD) through their convolutions' weights and biases, and shifted so that the
    median photo has as many candidates over the deployed cut as a trained YOLO keeps for its size
    (models.random_weights.CANDIDATE_SHARE)."""
    builder = BUILDERS[arch]
    preprocess = Preprocess(TransformSettings.calibrating(builder, *CALIBRATION_SIZES))
    batch = preprocess(calibration_photos()).images
    calibrate_batchnorm(network, batch.tensors)
    decode = _decode(network, DEPLOYED_CONF_THRES, builder.nms_thresh, builder.detections_per_img,
                     builder.topk_candidates)
    convs = classification_convs(network.head)
    with torch.no_grad():
        joined = network(batch.tensors)
        logits = joined[..., decode.class_start:]
        gain = CLASS_LOGIT_STD / float(logits.std().clamp_min(1e-12))
        centre = float(logits.mean())
        for conv in convs:
            conv.weight.mul_(gain)
            conv.bias.sub_(centre).mul_(gain)
        centred = network(batch.tensors)
        target = max(1.0, round(centred.shape[1] * CANDIDATE_SHARE, 1))
        first = 1 if decode.has_background else 0

        def median_count(shift: float) -> float:
            shifted = centred.clone()
            shifted[..., decode.class_start + first:] += shift
            counts = (decode.candidate_scores(shifted) > DEPLOYED_CONF_THRES).sum(dim=1)
            return float(statistics.median(counts.tolist()))

        shift = bisect_shift(median_count, target, steps=40)
        for conv in convs:  # a conv's channels are (anchor, class) pairs, classes fastest, as the head reads them
            conv.bias.view(-1, logits.shape[-1])[:, first:] += shift


def _decode(network: DenseNetwork, score_thresh: float, nms_thresh: float, detections_per_img: int,
            topk_candidates: int) -> Decode:
    if "level_sizes" not in network.__dict__:  # one meta copy of the backbone per network, for all its pipelines
        network.level_sizes = LevelSizes(network.backbone)
    return Decode(network.decoding, network.level_sizes, score_thresh, nms_thresh, detections_per_img,
                  topk_candidates)


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess,
                   evaluation: bool = False) -> DensePipeline:
    """`preprocess` and `postprocess` are the config's sections of the same names. `evaluation` changes nothing:
    torchvision evaluates its COCO mAP through the same transform it deploys."""
    decode = _decode(network.module, postprocess.conf_thres, postprocess.iou_thres, postprocess.max_det,
                     postprocess.topk_candidates)
    pre = Preprocess(TransformSettings.of(BUILDERS[network.arch], preprocess))
    return DensePipeline(forward, network.class_names, pre, decode, Postprocess(pre.transform))
