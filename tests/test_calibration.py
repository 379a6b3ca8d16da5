"""BatchNorm calibration of random weights: statistics equal the batch's own, and scores stop tying."""
import torch
from torch import nn

from models.calibration import calibrate_batchnorm
from pipelines.yolo import family as yolo


def test_running_statistics_become_the_batch_statistics():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=0.03), nn.ReLU(), nn.BatchNorm2d(4))
    batch = torch.rand(5, 3, 8, 8) * 7 + 2
    inputs = model[0](batch).detach()
    assert calibrate_batchnorm(model, batch) == 2
    bn = model[1]
    assert torch.allclose(bn.running_mean, inputs.mean(dim=(0, 2, 3)), atol=1e-5)
    assert torch.allclose(bn.running_var, inputs.var(dim=(0, 2, 3), unbiased=True), rtol=1e-4)
    assert bn.momentum == 0.03 and not model.training
    assert all(p.grad is None for p in model.parameters())
    normalised = model[:2](batch)
    assert torch.allclose(normalised.mean(dim=(0, 2, 3)), torch.zeros(4), atol=1e-4)


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
