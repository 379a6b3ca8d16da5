"""The R-CNN network between its transform's two ends (pipelines/rcnn/network.py): torchvision's own modules and
state_dict keys, the same detections as torchvision's model where its transform does nothing, and each image's
detections kept inside its own size in a padded batch. On a tiny Faster R-CNN (one conv as backbone, returning a
tensor) with seeded random weights, and torchvision's real builder for the keys; no download."""
from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.rpn import AnchorGenerator
from torchvision.ops import MultiScaleRoIAlign

from pipelines.rcnn.network import TwoStageNetwork
from pipelines.torchvision_common.weights import build_detector

SIDE = 64


def tiny_detector(seed: int = 0) -> FasterRCNN:
    """A Faster R-CNN whose backbone is one stride-4 conv (a plain tensor out), 3 classes, every score kept, and
    a transform that leaves a 64 x 64 image as it is (min = max size 64, mean 0, std 1)."""
    torch.manual_seed(seed)
    backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1), nn.ReLU())
    backbone.out_channels = 8
    return FasterRCNN(backbone, rpn_anchor_generator=AnchorGenerator(((16,),), ((1.0,),)),
                      box_roi_pool=MultiScaleRoIAlign(["0"], 7, 2), box_head=TwoMLPHead(8 * 7 * 7, 32),
                      box_predictor=FastRCNNPredictor(32, 3), min_size=SIDE, max_size=SIDE, image_mean=[0.0] * 3,
                      image_std=[1.0] * 3, box_score_thresh=0.0).eval()


def detect(network: TwoStageNetwork, batch: torch.Tensor, sizes=None):
    with torch.inference_mode():
        return network(batch, sizes) if sizes is not None else network(batch)


def test_the_parts_are_torchvisions_own_modules_under_its_keys():
    model = build_detector("fasterrcnn_mobilenet_v3_large_fpn", seed=0)
    network = TwoStageNetwork(model)
    assert network.backbone is model.backbone and network.rpn is model.rpn and network.roi_heads is model.roi_heads
    assert list(network.state_dict()) == list(model.state_dict())  # the transform has no state of its own
    assert [name for name, _ in network.named_children()] == ["backbone", "rpn", "roi_heads"]


def test_it_gives_torchvisions_detections_where_the_transform_does_nothing():
    model = tiny_detector()
    image = torch.rand(3, SIDE, SIDE, generator=torch.Generator().manual_seed(1))
    ours = detect(TwoStageNetwork(model), image[None])[0]
    with torch.inference_mode():
        theirs = model([image])[0]
    assert len(ours["boxes"]) == 100  # detections_per_img, with every score kept
    for key in ("boxes", "scores", "labels"):
        assert torch.equal(ours[key], theirs[key]), key


def test_no_image_sizes_means_every_image_fills_the_batch():
    network = TwoStageNetwork(tiny_detector())
    batch = torch.rand(2, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(2))
    implicit, explicit = detect(network, batch), detect(network, batch, [(SIDE, SIDE), (SIDE, SIDE)])
    assert len(implicit) == 2
    for mine, theirs in zip(implicit, explicit):
        assert torch.equal(mine["boxes"], theirs["boxes"]) and torch.equal(mine["scores"], theirs["scores"])


def test_each_image_of_a_padded_batch_keeps_its_detections_inside_its_own_size():
    network = TwoStageNetwork(tiny_detector())
    batch = torch.rand(2, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(3))
    small, whole = detect(network, batch, [(32, 48), (SIDE, SIDE)])
    assert len(small["boxes"]) > 0 and len(whole["boxes"]) > 0
    corner = small["boxes"].amax(dim=0)
    assert float(corner[2]) <= 48 and float(corner[3]) <= 32  # x2 within its width 48, y2 within its height 32
    assert float(whole["boxes"][:, 2:].max()) > 48  # the full-size image's reach past it


def test_a_backbone_of_named_feature_maps_is_taken_as_it_is():
    class Named(nn.Module):
        def __init__(self, inner: nn.Module):
            super().__init__()
            self.inner, self.out_channels = inner, inner.out_channels

        def forward(self, x):
            return OrderedDict([("0", self.inner(x))])

    model = tiny_detector()
    plain = TwoStageNetwork(model)
    batch = torch.rand(1, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(4))
    expected = detect(plain, batch)[0]
    model.backbone = Named(model.backbone)
    named = detect(TwoStageNetwork(model), batch)[0]
    assert torch.equal(named["boxes"], expected["boxes"]) and torch.equal(named["labels"], expected["labels"])
