"""torchvision's detectors' weights (pipelines/torchvision_common/weights.py): a checkpoint's mismatch with the model,
in words, a checkpoint file loaded only where it fits, and seeded random detectors."""
import pytest
import torch
from torch import nn

from models import CheckpointError
from pipelines.torchvision_common.weights import COCO_CATEGORIES, build_detector, load_state_dict_file, state_dict_mismatch


def test_state_dict_mismatch_ignores_only_batchnorm_counters():
    expected = {"a.weight": torch.zeros(2), "bn.num_batches_tracked": torch.tensor(0)}
    assert state_dict_mismatch(expected, {"a.weight": torch.ones(2)}) == ""
    assert state_dict_mismatch(expected, {"a.weight": torch.ones(3)}) == ("1 of another shape (e.g. a.weight: file "
                                                                         "(3,), model (2,))")


def test_a_checkpoint_loads_only_when_every_key_and_shape_fits(tmp_path):
    model = nn.Sequential(nn.Conv2d(3, 2, 1), nn.BatchNorm2d(2))
    saved = {name: torch.full_like(value, 0.5) if value.is_floating_point() else value
             for name, value in model.state_dict().items()}
    good = tmp_path / "good.pth"
    torch.save(saved, good)
    load_state_dict_file(model, str(good), "tiny")
    assert torch.equal(model[0].weight, torch.full((2, 3, 1, 1), 0.5))
    torch.save({"0.weight": torch.zeros(2, 3, 1, 1)}, tmp_path / "part.pth")
    with pytest.raises(CheckpointError, match=r"part.pth does not fit model.arch tiny: 5 key\(s\) missing"):
        load_state_dict_file(model, str(tmp_path / "part.pth"), "tiny")
    torch.save([torch.zeros(1)], tmp_path / "list.pth")
    with pytest.raises(CheckpointError, match="holds a list, not a plain state_dict"):
        load_state_dict_file(model, str(tmp_path / "list.pth"), "tiny")
    with pytest.raises(CheckpointError, match="is a folder, not a file"):
        load_state_dict_file(model, str(tmp_path), "tiny")
    with pytest.raises(CheckpointError, match="no such file"):
        load_state_dict_file(model, str(tmp_path / "absent.pth"), "tiny")


@pytest.mark.slow  # three SSDlite detectors built
def test_a_seeded_detector_is_the_same_for_the_same_seed_and_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    first = build_detector("ssdlite320_mobilenet_v3_large", seed=1)
    assert torch.equal(torch.rand(1), expected_next)  # built on a forked generator
    again = build_detector("ssdlite320_mobilenet_v3_large", seed=1)
    other = build_detector("ssdlite320_mobilenet_v3_large", seed=2)
    weight = "head.classification_head.module_list.0.1.weight"
    assert torch.equal(first.state_dict()[weight], again.state_dict()[weight])
    assert not torch.equal(first.state_dict()[weight], other.state_dict()[weight])
    assert not first.training and "person" in COCO_CATEGORIES
