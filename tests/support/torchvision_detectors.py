"""torchvision's detectors as the tests build them (pipelines/dense/, pipelines/rcnn/): the bundled photos as BGR
arrays and as torchvision takes them, the dense family's pipelines at small sizes, and torchvision's own model on the
same weights and settings to hold them to."""
from __future__ import annotations

import cv2
import numpy as np
import torch
from torchvision.models import detection

from pipelines.dense import family
from pipelines.runtimes.registry import build_runtime
from utils.config.schema import config_for
from tests.support.paths import SAMPLES

SMALL = {"retinanet_resnet50_fpn": {"img_size": 128, "max_size": 192},
         "retinanet_resnet50_fpn_v2": {"img_size": 128, "max_size": 192},
         "fcos_resnet50_fpn": {"img_size": 128, "max_size": 192},
         "ssd300_vgg16": {},  # its layers need at least 268
         "ssdlite320_mobilenet_v3_large": {"img_size": 160}}


def photo(name: str) -> np.ndarray:
    return cv2.imread(str(SAMPLES / name))


def as_rgb_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image[..., ::-1].transpose(2, 0, 1))).float() / 255.0


def pipeline(arch: str, network=None, preprocess: dict | None = None, **postprocess):
    """The dense family's pipeline for `arch` at its SMALL sizes (or at `preprocess`), and its config."""
    config = config_for(arch, preprocess=SMALL[arch] if preprocess is None else preprocess, postprocess=postprocess)
    network = network or family.load_network(arch, None, 0)
    forward = build_runtime("torch", fuse=False, precision="fp32").prepare(
        network, family.example_input(config.preprocess))
    return family.build_pipeline(network, forward, config.preprocess, config.postprocess), config


def torchvision_own(arch: str, state: dict, config) -> torch.nn.Module:
    """torchvision's model on the same weights and settings, whose model([image]) the pipeline must equal."""
    model = getattr(detection, arch)(weights=None, weights_backbone=None).eval()
    model.load_state_dict(state)  # strict: the network's keys are torchvision's own
    post, pre = config.postprocess, config.preprocess
    model.score_thresh, model.nms_thresh = post.conf_thres, post.iou_thres
    model.detections_per_img, model.topk_candidates = post.max_det, post.topk_candidates
    model.transform.min_size, model.transform.max_size = (pre.img_size,), pre.max_size
    if model.transform.fixed_size is not None:
        model.transform.fixed_size = (pre.img_size, pre.img_size)
    return model
