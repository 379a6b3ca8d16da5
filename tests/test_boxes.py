import pytest
import torch

from utils.boxes import box_iou, clip_boxes, scale_boxes_to_original, xywh_to_xyxy
from utils.letterbox import letterbox_geometry


def _brute_force_iou(a, b):
    ix1, iy1 = max(a[0], b[0]), max(a[1], b[1])
    ix2, iy2 = min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, ix2 - ix1) * max(0.0, iy2 - iy1)
    area_a = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1])
    area_b = max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])
    union = area_a + area_b - inter
    return inter / union if union > 0 else 0.0


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


def test_box_iou_hand_cases():
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0], [0.0, 0.0, 1.0, 1.0]])
    b = torch.tensor([[1.0, 1.0, 3.0, 3.0], [0.0, 0.0, 2.0, 2.0], [5.0, 5.0, 5.0, 5.0]])
    # [0,0,2,2] vs [1,1,3,3]: inter 1, union 4 + 4 - 1 = 7; identical boxes -> 1;
    # [0,0,1,1] vs [0,0,2,2]: inter 1, union 4; zero-area box vs anything -> 0
    expected = torch.tensor([[1 / 7, 1.0, 0.0], [0.0, 1 / 4, 0.0]])
    torch.testing.assert_close(box_iou(a, b), expected)


def test_box_iou_matches_brute_force():
    generator = torch.Generator().manual_seed(3)
    top_left = torch.rand(12, 2, generator=generator) * 50
    boxes_a = torch.cat((top_left, top_left + torch.rand(12, 2, generator=generator) * 30), 1)
    top_left = torch.rand(9, 2, generator=generator) * 50
    boxes_b = torch.cat((top_left, top_left + torch.rand(9, 2, generator=generator) * 30), 1)
    iou = box_iou(boxes_a, boxes_b)
    assert iou.shape == (12, 9)
    expected = torch.tensor([[_brute_force_iou(a, b) for b in boxes_b.tolist()] for a in boxes_a.tolist()])
    assert (expected > 0).any()
    torch.testing.assert_close(iou, expected)


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
