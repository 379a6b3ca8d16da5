"""yolov7-tiny on seeded random weights (seed 3) and its fused torch forward at 128, for the YOLO tests."""
import pytest
import torch

from pipelines.runtimes.registry import build_runtime
from pipelines.yolo import family as yolo_family


@pytest.fixture(scope="module")
def network():
    return yolo_family.load_network("yolov7-tiny", None, seed=3)


@pytest.fixture(scope="module")
def model(network):
    return build_runtime("torch", fuse=True).prepare(network, torch.zeros(1, 3, 128, 128))
