import pytest
import torch

from pipelines.boxes.conversions import clip_boxes, scale_boxes_to_original, xywh_to_xyxy, xyxy_to_xywh
from pipelines.boxes.letterbox import letterbox_geometry


def test_xywh_to_xyxy_hand_case():
    # centre (10, 20), size 4 x 6 -> x 10 -/+ 2, y 20 -/+ 3
    boxes = torch.tensor([[10.0, 20.0, 4.0, 6.0], [0.0, 0.0, 1.0, 3.0]])
    expected = torch.tensor([[8.0, 17.0, 12.0, 23.0], [-0.5, -1.5, 0.5, 1.5]])
    assert torch.equal(xywh_to_xyxy(boxes), expected)


def test_xywh_to_xyxy_keeps_leading_dims_and_input():
    boxes = torch.rand(2, 5, 4)
    before = boxes.clone()
    converted = xywh_to_xyxy(boxes)
    assert converted.shape == (2, 5, 4)
    assert torch.equal(boxes, before)
    torch.testing.assert_close(converted[..., 2] - converted[..., 0], boxes[..., 2])


def test_clip_boxes_hand_case():
    boxes = torch.tensor([[-5.0, -1.0, 700.0, 500.0], [10.0, 20.0, 30.0, 40.0]])
    clipped = clip_boxes(boxes, (480, 640))
    assert torch.equal(clipped, torch.tensor([[0.0, 0.0, 640.0, 480.0], [10.0, 20.0, 30.0, 40.0]]))
    assert boxes[0, 0] == -5.0  # input untouched


def test_scale_boxes_removes_padding_only_when_ratio_is_one():
    # 480x640 into 640: r = 1, top padding 80
    geometry = letterbox_geometry(480, 640, 640, auto=False)
    boxes = torch.tensor([[100.0, 180.0, 200.0, 280.0]])
    assert torch.equal(scale_boxes_to_original(boxes, geometry, (480, 640)), torch.tensor([[100.0, 100.0, 200.0, 200.0]]))


def test_scale_boxes_with_padding_and_ratio():
    # 427x640 into 320: r = min(320/427, 320/640) = 0.5; unpad (320, round(213.5) = 214);
    # dh = 106 -> top 53. Box x: (40 - 0) / 0.5 = 80, (120 - 0) / 0.5 = 240;
    # y: (63 - 53) / 0.5 = 20, (153 - 53) / 0.5 = 200
    geometry = letterbox_geometry(427, 640, 320, auto=False)
    assert (geometry.ratio, geometry.pad_top, geometry.pad_left) == (0.5, 53, 0)
    detections = torch.tensor([[40.0, 63.0, 120.0, 153.0, 0.9, 7.0]])
    scaled = scale_boxes_to_original(detections, geometry, (427, 640))
    assert torch.equal(scaled, torch.tensor([[80.0, 20.0, 240.0, 200.0, 0.9, 7.0]]))
    assert detections[0, 0] == 40.0  # input untouched


def test_scale_boxes_clips_boxes_reaching_into_padding():
    geometry = letterbox_geometry(480, 640, 640, auto=False)  # top/bottom padding 80
    boxes = torch.tensor([[-3.0, 10.0, 650.0, 630.0]])
    assert torch.equal(scale_boxes_to_original(boxes, geometry, (480, 640)), torch.tensor([[0.0, 0.0, 640.0, 480.0]]))


@pytest.mark.parametrize("h, w, new_shape, auto", [(427, 640, 640, True), (500, 375, 320, False), (100, 200, (256, 320), False)])
def test_round_trip_through_letterbox_space(h, w, new_shape, auto):
    geometry = letterbox_geometry(h, w, new_shape, auto=auto)
    generator = torch.Generator().manual_seed(h + w)
    x1y1 = torch.rand(20, 2, generator=generator) * torch.tensor([w / 2, h / 2])
    x2y2 = x1y1 + torch.rand(20, 2, generator=generator) * torch.tensor([w / 2, h / 2])
    original = torch.cat((x1y1, x2y2), 1)

    forward = original * geometry.ratio + torch.tensor(
        [geometry.pad_left, geometry.pad_top, geometry.pad_left, geometry.pad_top], dtype=torch.float32
    )
    torch.testing.assert_close(scale_boxes_to_original(forward, geometry, (h, w)), original, rtol=0, atol=1e-3)


def test_corners_become_centre_and_size_and_back():
    corners = torch.tensor([[10.0, 20.0, 30.0, 60.0]])
    centred = xyxy_to_xywh(corners)
    assert centred.tolist() == [[20.0, 40.0, 20.0, 40.0]]
    assert torch.equal(xywh_to_xyxy(centred), corners)
