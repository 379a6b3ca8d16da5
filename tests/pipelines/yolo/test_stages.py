"""YOLO's preprocessing stage (pipelines/yolo/stages.py): a square letterbox in RGB CHW at unit range, a rect batch
padded at the bottom right, and the conversion bit for bit the reference for every byte value, as floats or as the
pixels themselves for a runtime that converts them."""
import numpy as np
import pytest
import torch

from pipelines.boxes.letterbox import letterbox
from pipelines.boxes.letterbox import LetterboxGeometry
from pipelines.yolo.stages import PreprocessedBatch, Preprocess, ScaleBoxes
from tests.support.images import random_images


def test_square_preprocess_is_rgb_chw_unit_range():
    image = np.zeros((64, 128, 3), np.uint8)
    image[..., 0] = 255  # pure blue in BGR
    batch = Preprocess(128, False, 114, 32)([image])
    assert batch.tensor.shape == (1, 3, 128, 128) and batch.tensor.dtype == torch.float32
    content = batch.tensor[0, :, 64, 64]
    assert content.tolist() == [0.0, 0.0, 1.0]
    assert torch.allclose(batch.tensor[0, :, 0, 0], torch.full((3,), 114 / 255))
    assert batch.original_shapes == [(64, 128)]


def test_rect_batch_pads_each_minimal_rectangle_at_bottom_right():
    batch = Preprocess(128, True, 114, 32)(random_images())
    first, _ = letterbox(random_images()[0], 128, auto=True, stride=32)
    second, _ = letterbox(random_images()[1], 128, auto=True, stride=32)
    assert first.shape[:2] == (96, 128) and second.shape[:2] == (128, 64)
    assert batch.tensor.shape == (2, 3, 128, 128)
    expected = torch.from_numpy(np.ascontiguousarray(second[..., ::-1].transpose(2, 0, 1))).float() / 255
    assert torch.equal(batch.tensor[1, :, :128, :64], expected)
    assert torch.all(batch.tensor[1, :, :, 64:] == 114 / 255)


def _reference_pixels(canvases, pad_value):
    """The layout spelled out in numpy: pad into a uint8 batch, BGR to RGB, HWC to CHW."""
    height, width = max(c.shape[0] for c in canvases), max(c.shape[1] for c in canvases)
    batch = np.full((len(canvases), height, width, 3), pad_value, dtype=np.uint8)
    for slot, canvas in zip(batch, canvases):
        slot[:canvas.shape[0], :canvas.shape[1]] = canvas
    return torch.from_numpy(np.ascontiguousarray(batch[..., ::-1].transpose(0, 3, 1, 2)))


def _reference_tensor(canvases, pad_value):
    """Then float, / 255."""
    return _reference_pixels(canvases, pad_value).float().div_(255.0)


@pytest.mark.parametrize("rect, evaluation", [(False, False), (True, False), (False, True)])
def test_conversion_is_bit_for_bit_the_reference_for_every_byte_value_and_padding(rect, evaluation):
    rng = np.random.default_rng(1)
    every_byte = np.stack([np.roll(np.arange(256, dtype=np.uint8), shift) for shift in (0, 85, 170)], axis=-1)
    first = np.tile(every_byte[None], (90, 1, 1))[:, :160]  # each channel takes every value 0-255
    second = rng.integers(0, 256, (200, 100, 3), dtype=np.uint8)
    preprocess = Preprocess(128, rect, 114, 32, evaluation=evaluation)
    batch = preprocess([first, second])
    if evaluation:
        from pipelines.boxes.letterbox import evaluation_letterbox, evaluation_shape
        shape = evaluation_shape([first.shape[:2], second.shape[:2]], 128, 32)
        canvases = [evaluation_letterbox(image, 128, shape, (114,) * 3)[0] for image in (first, second)]
    else:
        canvases = [letterbox(image, 128, color=(114,) * 3, auto=rect, stride=32)[0] for image in (first, second)]
    assert torch.equal(batch.tensor, _reference_tensor(canvases, 114))
    # For a runtime that converts inside its own graph: the same layout, the bytes themselves.
    pixels = Preprocess(128, rect, 114, 32, evaluation=evaluation, pixels=True)([first, second])
    assert pixels.tensor.dtype == torch.uint8 and torch.equal(pixels.tensor, _reference_pixels(canvases, 114))
    assert pixels.geometries == batch.geometries and pixels.original_shapes == batch.original_shapes
    unpadded = Preprocess(256, False, 114, 32)([np.tile(every_byte[None], (256, 1, 1))])
    assert torch.equal(unpadded.tensor, _reference_tensor([np.tile(every_byte[None], (256, 1, 1))], 114))


def test_boxes_go_back_to_each_original_image_and_are_clipped_to_it():
    """Hand-computed: a 100x200 (h x w) image letterboxed to 128 is scaled by 0.64 and padded 32 at the top."""
    wide = LetterboxGeometry(0.64, (128, 64), 32, 32, 0, 0, (128, 128))
    plain = LetterboxGeometry(1.0, (128, 128), 0, 0, 0, 0, (128, 128))
    detections = [torch.tensor([[0.0, 32.0, 64.0, 96.0, 0.9, 3.0], [120.0, 90.0, 140.0, 200.0, 0.5, 1.0]]),
                  torch.tensor([[-5.0, 10.0, 20.0, 30.0, 0.7, 2.0]])]
    batch = PreprocessedBatch(torch.zeros(2, 3, 128, 128), [wide, plain], [(100, 200), (128, 128)])
    first, second = ScaleBoxes()(detections, batch)
    torch.testing.assert_close(first, torch.tensor([[0.0, 0.0, 100.0, 100.0, 0.9, 3.0],
                                                    [187.5, 90.625, 200.0, 100.0, 0.5, 1.0]]))
    torch.testing.assert_close(second, torch.tensor([[0.0, 10.0, 20.0, 30.0, 0.7, 2.0]]))
    assert detections[0][0, 1] == 32.0  # the input is left as it was
