"""torch.compile through the torch runtime: the compiled program gives eager's answers on every input shape,
compile time is reported apart from the first inference, and no layer hooks are offered."""
import pytest
import torch
from torch import nn

from pipelines.contract import LoadedNetwork
from pipelines.runtimes.registry import build_runtime

pytestmark = pytest.mark.slow  # torch.compile compiles for every input shape


def small_network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.SiLU(), nn.Conv2d(8, 4, 1)).eval()


def test_compiled_forward_equals_eager_across_shapes_and_reports_compile_apart():
    eager = small_network()
    network = LoadedNetwork(small_network(), ["a"], "random (seed 0)", True, "test")
    runtime = build_runtime("torch", threads=2, compile=True)
    prepared = runtime.prepare(network, torch.rand(1, 3, 32, 32))
    assert prepared.module is None
    # a short last batch and a rect letterbox shape, after compiling at another shape
    for shape in [(2, 3, 32, 48), (1, 3, 64, 32)]:
        batch = torch.rand(shape)
        with torch.inference_mode():
            expected = eager(batch)
        torch.testing.assert_close(prepared(batch), expected, rtol=1e-4, atol=1e-5)
    settings = runtime.settings()
    assert settings["compile"] is True and settings["threads"] == 2
    preparation = settings["preparation"]
    assert preparation["compile_and_first_inference_ms"] > preparation["first_inference_ms"] > 0
