"""yolov7-tiny prepared on ONNX Runtime and OpenVINO (one export per test module, cached in the module's folder),
and torch eager fp32 to hold them to: the fixtures of onnxruntime/test_session.py and openvino/test_session.py."""
import copy

import pytest
import torch

from pipelines.runtimes.registry import build_runtime
from tests.support.exported_runtimes import SIZE, THREADS


@pytest.fixture(scope="module")
def example():
    return torch.zeros(1, 3, SIZE, SIZE)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def reference(network):
    module = copy.deepcopy(network.module)
    network.fuse(module)
    module.float().eval()

    def run(batch: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return module(batch)

    return run


@pytest.fixture(scope="module")
def onnxruntime(network, example, cache_dir):
    runtime = build_runtime("onnxruntime", threads=THREADS, cache_dir=cache_dir)
    return runtime, runtime.prepare(network, example)


@pytest.fixture(scope="module")
def openvino(network, example, cache_dir, onnxruntime):  # after onnxruntime: the export is cached then
    # Float batches, as torch eager takes them; the u8 input it runs by default is tested in openvino/test_session.py.
    runtime = build_runtime("openvino", threads=THREADS, cache_dir=cache_dir, input_precision="f32")
    return runtime, runtime.prepare(network, example)
