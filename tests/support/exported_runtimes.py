"""What the tests of ONNX Runtime's and OpenVINO's sessions share (their fixtures are in
tests/pipelines/runtimes/conftest.py): the input sizes and what every session must hold to."""
import threading

import torch

SIZE = 128
THREADS = 2
SHAPES = [(2, 3, SIZE, SIZE), (1, 3, 96, 160), (3, 3, SIZE, SIZE)]  # square batch, rect, another batch size
SHAPE_IDS = ["square-b2", "rect-96x160", "square-b3"]


def assert_fp32_output_equals_torch_eager(forward, reference, shape) -> None:
    batch = torch.rand(shape, generator=torch.Generator().manual_seed(1))
    expected = reference(batch)
    output = forward(batch)
    assert isinstance(output, torch.Tensor) and output.dtype == torch.float32
    assert output.shape == expected.shape
    scale = float(expected.abs().max())
    # float32 sums in another order: 1e-4 of the largest value (box sizes of hundreds of pixels) is well
    # under the half pixel the agreement check allows.
    assert float((output - expected).abs().max()) <= 1e-4 * scale


def assert_an_output_holds_until_the_calling_threads_next_forward(forward) -> None:
    """An output may be the runtime's own buffer (OpenVINO's is not copied): another thread's forwards, with
    requests of their own, never touch it."""
    first = forward(torch.rand(1, 3, SIZE, SIZE))
    kept = first.clone()
    others = [threading.Thread(target=forward, args=(torch.rand(1, 3, SIZE, SIZE),)) for _ in range(2)]
    for thread in others:
        thread.start()
    for thread in others:
        thread.join()
    assert torch.equal(first, kept)
