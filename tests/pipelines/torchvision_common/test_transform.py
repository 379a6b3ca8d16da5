"""torchvision's transform as a stage (pipelines/torchvision_common/transform.py): the batch shape it makes, worked
out before it runs (hand-computed here) and equal to what it makes; BGR images turned RGB in [0, 1]; a sliver of an
image stretched until it resizes to a pixel; boxes and masks back in the original image's pixels."""
import numpy as np
import pytest
import torch

from pipelines.torchvision_common.facts import Builder
from pipelines.torchvision_common.transform import MASK_THRESHOLD, Postprocess, Preprocess, TransformSettings

PLAIN = TransformSettings(min_size=64, max_size=100, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))


def test_the_batch_shape_is_worked_out_as_the_transform_makes_it():
    preprocess = Preprocess(PLAIN)
    # 480x640: scale min(64/480, 100/640) = 2/15 -> 64 x 85; 300x200: scale min(64/200, 100/300) = 0.32 -> 96 x 64;
    # padded to the largest (96 x 85), rounded up to multiples of 32.
    sizes = [(480, 640), (300, 200)]
    assert preprocess.batch_shape(sizes) == (2, 3, 96, 96)
    made = preprocess([np.zeros((h, w, 3), np.uint8) for h, w in sizes])
    assert tuple(made.images.tensors.shape) == (2, 3, 96, 96)
    assert made.images.image_sizes == [(64, 85), (96, 64)] and made.original_sizes == sizes
    square = Preprocess(TransformSettings(80, 80, (0.0,) * 3, (1.0,) * 3, size_divisible=1, fixed_size=True))
    assert square.batch_shape(sizes) == (2, 3, 80, 80) == tuple(square(made_images(sizes)).images.tensors.shape)


def made_images(sizes):
    return [np.zeros((h, w, 3), np.uint8) for h, w in sizes]


def test_bgr_images_become_rgb_in_unit_range_then_normalised():
    image = np.zeros((64, 64, 3), np.uint8)
    image[..., 0] = 255  # pure blue in BGR
    tensor = Preprocess(PLAIN)([image]).images.tensors[0]
    assert tensor[:, 10, 10].tolist() == [0.0, 0.0, 1.0]
    normalised = Preprocess(TransformSettings(64, 100, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)))([image])
    assert normalised.images.tensors[0][:, 10, 10].tolist() == [-2.0, -2.0, 2.0]


def test_a_sliver_of_an_image_is_stretched_until_it_resizes_to_a_pixel():
    made = Preprocess(PLAIN)([np.zeros((1, 5000, 3), np.uint8)])
    height, width = made.images.image_sizes[0]
    assert height >= 1 and width == 100 and made.original_sizes == [(1, 5000)]


def test_boxes_and_masks_go_back_to_the_original_image():
    preprocess = Preprocess(PLAIN)
    batch = preprocess([np.zeros((128, 200, 3), np.uint8)])  # resized by 0.5 to 64 x 100
    assert batch.images.image_sizes == [(64, 100)]
    masks = torch.full((1, 1, 28, 28), 0.9)  # torchvision's masks are the box's own, pasted into the image
    found = {"boxes": torch.tensor([[10.0, 20.0, 50.0, 60.0]]), "scores": torch.tensor([0.8]),
             "labels": torch.tensor([3]), "masks": masks}
    detections = Postprocess(preprocess.transform)([found], batch)[0]
    torch.testing.assert_close(detections.boxes, torch.tensor([[20.0, 40.0, 100.0, 120.0]]))
    assert detections.labels.tolist() == [3] and detections.scores.tolist() == pytest.approx([0.8])
    assert detections.masks.shape == (1, 128, 200) and detections.masks.dtype == torch.bool
    # pasted into the box back in the original pixels (x 20 to 100, y 40 to 120), nowhere else
    assert bool(detections.masks[0, 80, 60]) and not bool(detections.masks[0, 10, 10])
    assert not bool(detections.masks[0, 80, 150])
    assert found["boxes"].tolist() == [[10.0, 20.0, 50.0, 60.0]]  # the forward's own detections are left as they were
    assert 0.0 < MASK_THRESHOLD < 0.9
    plain = Postprocess(preprocess.transform)([{k: v for k, v in found.items() if k != "masks"}], batch)[0]
    assert plain.masks is None


def test_calibrating_keeps_a_fixed_square_at_its_builders_own_size():
    square = Builder(300, 300, 0.01, 0.45, 200, fixed_size=True, size_divisible=1)
    fpn = Builder(800, 1333, 0.05, 0.5, 100)
    assert TransformSettings.calibrating(square, 160, 256) == TransformSettings(
        300, 300, square.mean, square.std, 1, True)
    assert TransformSettings.calibrating(fpn, 160, 256) == TransformSettings(160, 256, fpn.mean, fpn.std, 32, False)
