"""Calibration of random weights: BatchNorm statistics equal the batch's own, scores stop tying, and Detect's
box logits and candidate count look like a trained head's."""
import statistics

import pytest
import torch
from torch import nn

from models import Detect, build_model
from models.yolo import definition_path
from models.random_weights import (bisect_shift, calibrate_batchnorm, calibrate_detect_head, candidate_counts,
                                candidate_target)
from pipelines.yolo import family as yolo


def test_running_statistics_become_the_batch_statistics():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=0.03), nn.ReLU(), nn.BatchNorm2d(4))
    batch = torch.rand(5, 3, 8, 8) * 7 + 2
    inputs = model[0](batch).detach()
    output = calibrate_batchnorm(model, batch)
    assert output.shape == (5, 4, 6, 6)  # the calibration pass's own output, which Detect's calibration uses
    bn = model[1]
    assert torch.allclose(bn.running_mean, inputs.mean(dim=(0, 2, 3)), atol=1e-5)
    assert torch.allclose(bn.running_var, inputs.var(dim=(0, 2, 3), unbiased=True), rtol=1e-4)
    assert bn.momentum == 0.03 and not model.training
    assert all(p.grad is None for p in model.parameters())
    normalised = model[:2](batch)
    assert torch.allclose(normalised.mean(dim=(0, 2, 3)), torch.zeros(4), atol=1e-4)


@pytest.mark.slow
def test_random_yolo_weights_are_reproducible_and_scores_spread():
    first = yolo.load_network("yolov7-tiny", None, seed=0)
    again = yolo.load_network("yolov7-tiny", None, seed=0)
    assert first.cache_key == again.cache_key
    assert all(torch.equal(a, b) for a, b in zip(first.module.state_dict().values(),
                                                  again.module.state_dict().values()))
    module = first.module.eval()
    with torch.no_grad():
        prediction = module(torch.rand(2, 3, 128, 128, generator=torch.Generator().manual_seed(0)))
    scores = (prediction[..., 5:] * prediction[..., 4:5]).amax(dim=-1)
    top = scores.topk(100, dim=1).values
    # Uncalibrated, the top 100 scores of an image are equal to float32 precision; calibrated, they spread.
    assert float((top[:, 0] - top[:, -1]).min()) > 1e-4


def test_bisect_shift_finds_the_smallest_shift_reaching_the_target():
    assert bisect_shift(lambda shift: shift * 10, 40) == pytest.approx(4.0, abs=1e-9)
    assert bisect_shift(lambda shift: 100, 40) == -30.0  # already there at the lowest shift
    assert bisect_shift(lambda shift: 0, 40) == 30.0  # never reached


def test_candidate_counts_follow_the_nms_rule():
    # two images, one level, one anchor, 2x1 cells, 5 + 2 columns; logits chosen around conf 0.25
    raw = torch.full((2, 1, 2, 1, 7), -10.0)
    raw[0, 0, 0, 0, 4] = 5.0   # obj ~1
    raw[0, 0, 0, 0, 6] = 0.0   # best class 0.5 -> score 0.5: a candidate
    raw[0, 0, 1, 0, 4] = 5.0   # obj ~1, classes ~0: not a candidate
    raw[1, 0, 0, 0, 4] = -1.0  # obj 0.27 > 0.25 but score 0.27 * 0.5 < 0.25
    raw[1, 0, 0, 0, 5] = 0.0
    assert candidate_counts([raw], 0.0).tolist() == [1, 0]
    assert candidate_counts([raw], 20.0).tolist() == [2, 2]
    assert candidate_counts([raw, raw], 0.0).tolist() == [2, 0]


@pytest.mark.slow
def test_detect_head_calibration_centres_box_logits_and_hits_the_candidate_target():
    model = build_model("yolov7-tiny", seed=0)
    batch = torch.rand(3, 3, 128, 128, generator=torch.Generator().manual_seed(0))
    level_maps = calibrate_batchnorm(model, batch)
    head = model.model[-1]
    assert isinstance(head, Detect)
    # 3 anchors x (16^2 + 8^2 + 4^2) cells at 128: 1008 rows, 40/25200 of them
    assert candidate_target(level_maps) == pytest.approx(1.6)
    shift = calibrate_detect_head(head, level_maps, target=5)
    model.train()
    with torch.no_grad():
        after = model(batch)
    boxes = torch.cat([raw[..., :4].transpose(0, 1).reshape(head.na, -1, 4) for raw in after[:1]], dim=1)
    # BatchNorm statistics do not move in eval mode, so the head's input is the calibration pass's own
    assert torch.allclose(boxes.mean(dim=1), torch.zeros(head.na, 4), atol=1e-4)
    assert torch.allclose(boxes.std(dim=1), torch.full((head.na, 4), 0.25), rtol=1e-3)
    assert statistics.median(candidate_counts(after, 0.0).tolist()) >= 5
    assert statistics.median(candidate_counts(level_maps, shift - 1e-3).tolist()) < 5


@pytest.mark.slow
def test_calibrated_random_weights_are_cached_on_disk_per_arch_and_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(yolo, "_calibrated", {})
    folder = tmp_path / "detbench" / "calibrated"
    calibrations = []
    monkeypatch.setattr(yolo, "calibrate_batchnorm",
                        lambda *args: calibrations.append(1) or calibrate_batchnorm(*args))
    # What is cached is tested here, not how it is calibrated: one small image keeps each calibration cheap.
    monkeypatch.setattr(yolo, "_calibration_batch",
                        lambda stride: torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0)))

    first = yolo.load_network("yolov7-tiny", None, seed=0)
    entries = sorted(folder.iterdir())
    assert len(calibrations) == 1 and len(entries) == 1 and entries[0].suffix == ".pt"
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary left behind

    monkeypatch.setattr(yolo, "_calibrated", {})  # as in a new process
    again = yolo.load_network("yolov7-tiny", None, seed=0)
    assert len(calibrations) == 1  # read from disk, not calibrated again
    assert again.cache_key == first.cache_key
    for name, value in first.module.state_dict().items():
        assert torch.equal(again.module.state_dict()[name], value), name

    yolo.load_network("yolov7-tiny", None, seed=1)
    edited = tmp_path / "yolov7-tiny-edited.yaml"  # another architecture file, as a user would write one
    edited.write_text(definition_path("yolov7-tiny").read_text() + "# edited\n")
    yolo.load_network(str(edited), None, seed=0)
    assert len(calibrations) == 3 and len(list(folder.iterdir())) == 3  # a new seed or arch: a new entry

    entries[0].write_bytes(entries[0].read_bytes()[:1000])  # truncated: rebuilt, not trusted
    monkeypatch.setattr(yolo, "_calibrated", {})
    rebuilt = yolo.load_network("yolov7-tiny", None, seed=0)
    assert len(calibrations) == 4 and rebuilt.cache_key == first.cache_key
    assert torch.load(entries[0], weights_only=True).keys() == first.module.state_dict().keys()
