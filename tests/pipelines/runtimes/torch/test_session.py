"""torch on the CPU, the reference runtime (pipelines/runtimes/torch/session.py): channels_last and bf16 autocast give
eager's answers (bf16's in reduced precision, returned as float32), fusing leaves no batch norm, and what it reports."""
import pytest
import torch

from pipelines.runtimes.base import RuntimeNotSupported
from pipelines.runtimes.registry import build_runtime
from pipelines.runtimes.torch.session import cpu_runs_bf16, floating_to_float32
from pipelines.yolo import family as yolo


@pytest.fixture(scope="module")
def example():
    return torch.rand(2, 3, 96, 96)


def reference(example):
    network = yolo.load_network("yolov7-tiny", None, seed=0)
    return build_runtime("torch").prepare(network, example)(example)


@pytest.mark.slow
def test_channels_last_gives_the_same_output(example):
    prepared = build_runtime("torch", channels_last=True).prepare(yolo.load_network("yolov7-tiny", None, seed=0),
                                                                  example)
    assert torch.allclose(prepared(example), reference(example), atol=1e-3, rtol=1e-4)


@pytest.mark.slow
def test_bf16_autocast_runs_in_bf16_and_returns_float32(example):
    if not cpu_runs_bf16():
        with pytest.raises(RuntimeNotSupported, match="bf16"):
            build_runtime("torch", precision="bf16")
        return
    runtime = build_runtime("torch", precision="bf16")
    prepared = runtime.prepare(yolo.load_network("yolov7-tiny", None, seed=0), example)
    output = prepared(example)
    assert output.dtype == torch.float32
    assert not torch.equal(output, reference(example))  # it really ran in reduced precision
    assert runtime.settings()["precision"] == "bf16" and runtime.settings()["autocast"] == "bfloat16"
    assert runtime.settings()["preparation"]["first_inference_ms"] > 0


def test_floating_to_float32_keeps_class_ids_integer():
    out = floating_to_float32([{"boxes": torch.ones(1, 4, dtype=torch.bfloat16), "labels": torch.tensor([3])}])
    assert out[0]["boxes"].dtype == torch.float32 and out[0]["labels"].dtype == torch.int64


def test_torch_runtime_fuses_and_reports_what_it_uses():
    settings = build_runtime("torch", fuse=True).settings()
    assert settings["fused"] is False  # nothing prepared yet: it says so
    runtime = build_runtime("torch", fuse=True, threads=torch.get_num_threads())
    prepared = runtime.prepare(yolo.load_network("yolov7-tiny", None, seed=0), torch.zeros(1, 3, 64, 64))
    settings = runtime.settings()
    assert settings["fused"] is True and settings["precision"] == "fp32"
    assert settings["threads"] == torch.get_num_threads()
    assert not any(type(m).__name__ == "BatchNorm2d" for m in prepared.module.modules())
    assert torch.is_inference(prepared(torch.zeros(1, 3, 64, 64)))
