"""Test batches as a prepared forward takes them: floats in [0, 1], or for a runtime that converts the pixels itself
(OpenVINO's default, PreparedForward.input_dtype uint8) the pixel values those floats stand for."""
import torch

from pipelines.runtimes.base import PreparedForward


def as_taken(forward: PreparedForward, floats: torch.Tensor) -> torch.Tensor:
    if forward.input_dtype == torch.uint8:
        return floats.mul(255).round().to(torch.uint8)
    return floats
