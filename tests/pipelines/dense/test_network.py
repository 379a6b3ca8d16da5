"""The dense network's decode (pipelines/dense/network.py), hand-computed on RetinaNet's box coder."""
import numpy as np
import pytest
import torch
from torchvision.models.detection.image_list import ImageList

from pipelines.dense import family
from pipelines.dense.network import Decode, LevelSizes

pytestmark = pytest.mark.slow  # RetinaNet built


def test_a_zero_regression_decodes_to_its_anchor_with_the_sigmoid_of_its_logit():
    """Hand-computed: RetinaNet's box coder moves an anchor by (dx, dy, dw, dh) = 0 not at all, and its score is
    the sigmoid of the class logit."""
    network = family.load_network("retinanet_resnet50_fpn", None, 0).module
    decode = Decode(network.decoding, LevelSizes(network.backbone), 0.5, 0.5, 10, 1000)
    images = ImageList(torch.zeros(1, 3, 128, 128), [(128, 128)])
    sizes = decode.level_sizes(128, 128)
    assert sizes == [(16, 16), (8, 8), (4, 4), (2, 2), (1, 1)]  # strides 8 to 128
    rows = 9 * sum(h * w for h, w in sizes)
    joined = torch.full((1, rows, 4 + 91), -20.0)
    joined[..., :4] = 0.0
    joined[0, 0, 4 + 17] = 2.0  # level 0, cell (0, 0), anchor 0 (size 32, ratio 0.5), class 17
    found = decode(joined, images)[0]
    # torchvision's anchor: a 32-px area at ratio h/w 0.5 -> w = 32 / sqrt(0.5), h = 32 * sqrt(0.5), centred on (0, 0),
    # both rounded as its AnchorGenerator rounds them.
    half_w, half_h = round(32 / 0.5 ** 0.5 / 2), round(32 * 0.5 ** 0.5 / 2)
    assert found["labels"].tolist() == [17]
    assert found["scores"].tolist() == pytest.approx([1 / (1 + np.exp(-2.0))])
    assert found["boxes"][0].tolist() == pytest.approx([0.0, 0.0, half_w, half_h])  # clipped to the image at 0
