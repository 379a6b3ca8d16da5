"""The R-CNN family: torchvision's Faster R-CNN and Mask R-CNN builders, their published checkpoints, and how
their pipeline is put together (its facts, the architectures and the keys it reads, are in facts.py)."""
from __future__ import annotations

import statistics
from typing import Any, Optional

import torch

from models.random_weights import bisect_shift, calibrate_batchnorm
from pipelines.contract import LoadedNetwork
from pipelines.rcnn import network as rcnn
from pipelines.rcnn.facts import (ARCHS, BUILDERS, EVALUATION_PREPROCESS, FORWARD_TIMING, NAME,  # noqa: F401
                                  SIZE_KEYS, accepts, defaults, input_size, largest_input_area, settings_problem,
                                  smallest_input, reference_backend, unsupported_runtime)
from pipelines.rcnn.pipeline import HeadSettings, RcnnPipeline
from pipelines.runtimes.base import PreparedForward
from pipelines.torchvision_common.facts import DEPLOYED_CONF_THRES
from pipelines.torchvision_common.transform import Postprocess, Preprocess, TransformSettings
from pipelines.torchvision_common.weights import (COCO_CATEGORIES, build_detector, calibration_photos,
                                                  loaded_network)

CALIBRATION_SIZES = (160, 256)  # min_size, max_size of the bundled photos the random backbone is calibrated on
# At torchvision's initialisation every class scores about 1/91, below any cut, so no box would reach NMS or the
# mask branch and postprocessing would do none of the work it does with trained weights. The classifier is
# scaled up (by a power of two) until one class can dominate a proposal, then its background logit shifted so
# that about this many proposals of the median photo clear the deployed cut, as a trained detector's do.
PROPOSALS_OVER_CUT = 40
GAINS = tuple(2.0 ** k for k in range(11))


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
        per_box = 2 * channels * _area(heads.mask_roi_pool.output_size) + (channels + len(COCO_CATEGORIES)) \
            * mask_side * mask_side
        heads_bytes += postprocess.max_det * per_box * floats
    return module.backbone, heads_bytes


def _area(size) -> int:
    return size[0] * size[1] if isinstance(size, (list, tuple)) else size * size


def load_network(arch: str, weights: Optional[str], seed: int, model: Any = None) -> LoadedNetwork:
    model = build_detector(arch, seed)
    network = rcnn.TwoStageNetwork(model).eval()
    return loaded_network(NAME, arch, network, weights, seed, lambda: _spread_random_weights(model, arch))


def _spread_random_weights(model, arch: str) -> None:
    """BatchNorm statistics of the backbone measured on the bundled photos (see models.random_weights), then the
    classifier scaled and its background logit shifted (PROPOSALS_OVER_CUT): random weights whose boxes clear
    the deployed score cut."""
    preprocess = Preprocess(TransformSettings.calibrating(BUILDERS[arch], *CALIBRATION_SIZES))
    batch = preprocess(calibration_photos())
    calibrate_batchnorm(model.backbone, batch.images.tensors)
    predictor = model.roi_heads.box_predictor
    seen: list[torch.Tensor] = []  # each photo's class logits of its proposals, one photo at a time
    handle = predictor.register_forward_hook(lambda module, args, output: seen.append(output[0]))
    network = rcnn.TwoStageNetwork(model)
    try:
        with torch.no_grad():
            for image, size in zip(batch.images.tensors, batch.images.image_sizes):
                network(image[None], [size])
    finally:
        handle.remove()

    def median_over_cut(gain: float, shift: float) -> float:
        counts = []
        for logits in seen:
            scaled = logits * gain
            scaled[:, 0] -= shift
            counts.append(int((torch.softmax(scaled, dim=-1)[:, 1:].amax(dim=-1) > DEPLOYED_CONF_THRES).sum()))
        return float(statistics.median(counts))

    gain = next((g for g in GAINS if median_over_cut(g, 1e4) >= PROPOSALS_OVER_CUT), GAINS[-1])
    shift = bisect_shift(lambda s: median_over_cut(gain, s), PROPOSALS_OVER_CUT, high=1e4, steps=50)
    with torch.no_grad():
        predictor.cls_score.weight.mul_(gain)
        predictor.cls_score.bias.mul_(gain)
        predictor.cls_score.bias[0] -= shift


def example_input(preprocess) -> torch.Tensor:
    return torch.zeros(1, 3, preprocess.img_size, preprocess.img_size)


def build_pipeline(network: LoadedNetwork, forward: PreparedForward, preprocess, postprocess,
                   evaluation: bool = False) -> RcnnPipeline:
    """`preprocess` and `postprocess` are the config's sections of the same names. `evaluation` changes nothing:
    torchvision evaluates its COCO mAP through the same transform it deploys."""
    module: rcnn.TwoStageNetwork = network.module
    settings = HeadSettings(postprocess.conf_thres, postprocess.iou_thres, postprocess.max_det,
                            postprocess.rpn_pre_nms_top_n, postprocess.rpn_post_nms_top_n)
    settings.apply(module)
    pre = Preprocess(TransformSettings.of(BUILDERS[network.arch], preprocess))
    return RcnnPipeline(forward, module, network.class_names, pre, Postprocess(pre.transform), settings)
