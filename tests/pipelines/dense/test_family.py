"""The dense family (pipelines/dense/family.py): a saved state_dict loads through model.weights and gives the same
detections, and one of another architecture is refused."""
import pytest
import torch
from torchvision.models import detection

from models import CheckpointError
from pipelines.dense import family
from tests.support.torchvision_detectors import photo, pipeline, torchvision_own
from utils.config.schema import config_for

pytestmark = pytest.mark.slow  # torchvision's dense detectors built and run


def test_a_saved_state_dict_loads_through_the_config_key_and_gives_the_same_detections(tmp_path):
    arch = "ssdlite320_mobilenet_v3_large"
    seeded, _ = pipeline(arch)
    path = tmp_path / "seeded.pth"
    torch.save(torchvision_own(arch, seeded.prepared.module.state_dict(), config_for(arch)).state_dict(), path)
    network = family.load_network(arch, str(path), seed=7)
    assert network.random_weights is False and network.weights == "checkpoint seeded.pth"
    loaded, _ = pipeline(arch, network=network)
    image = photo("dog.jpg")
    ours, theirs = seeded([image])[0], loaded([image])[0]
    assert torch.equal(ours.boxes, theirs.boxes) and torch.equal(ours.labels, theirs.labels)
    other = tmp_path / "retina.pth"
    torch.save(detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None).state_dict(), other)
    with pytest.raises(CheckpointError, match=f"retina.pth does not fit model.arch {arch}: .* key\\(s\\) missing"):
        family.load_network(arch, str(other), 0)
