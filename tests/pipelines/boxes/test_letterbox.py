import cv2
import numpy as np
import pytest

from pipelines.boxes.letterbox import (LetterboxGeometry, SquarePad, evaluation_geometry, evaluation_letterbox,
                                      evaluation_shape, letterbox, letterbox_geometry, pad_to_square,
                                      square_pad_geometry)


# Each case: (h, w, new_shape, auto, stride, scaleup, expected geometry), worked out by hand.
HAND_CASES = [
    pytest.param(
        480, 640, 640, False, 32, True,
        # r = min(640/480, 640/640) = 1; unpad (640, 480); dw = 0, dh = 160
        # top = round(80 - 0.1) = 80, bottom = round(80 + 0.1) = 80
        LetterboxGeometry(1.0, (640, 480), 80, 80, 0, 0, (640, 640)),
        id="480x640-to-640-square",
    ),
    pytest.param(
        500, 375, 640, True, 32, True,
        # r = min(640/500, 640/375) = 1.28; unpad (round(480.0), round(640.0)) = (480, 640)
        # dw = 160 -> 160 % 32 = 0, dh = 0: the minimal rectangle needs no padding
        LetterboxGeometry(1.28, (480, 640), 0, 0, 0, 0, (640, 480)),
        id="500x375-auto-no-padding",
    ),
    pytest.param(
        427, 640, 640, True, 32, True,
        # r = 1; unpad (640, 427); dh = 213 -> 213 % 32 = 21; 21 / 2 = 10.5
        # top = round(10.4) = 10, bottom = round(10.6) = 11; out h = 427 + 21 = 448
        LetterboxGeometry(1.0, (640, 427), 10, 11, 0, 0, (448, 640)),
        id="427x640-auto-odd-padding",
    ),
    pytest.param(
        427, 640, 640, False, 32, True,
        # r = 1; dh = 213 -> 106.5: top = round(106.4) = 106, bottom = round(106.6) = 107
        LetterboxGeometry(1.0, (640, 427), 106, 107, 0, 0, (640, 640)),
        id="427x640-odd-padding",
    ),
    pytest.param(
        100, 200, 640, False, 32, False,
        # r = min(6.4, 3.2) = 3.2 -> min(3.2, 1) = 1; unpad (200, 100)
        # dw = 440 -> 220 / 220, dh = 540 -> 270 / 270
        LetterboxGeometry(1.0, (200, 100), 270, 270, 220, 220, (640, 640)),
        id="small-image-no-scaleup",
    ),
    pytest.param(
        100, 200, 640, False, 32, True,
        # r = 3.2; unpad (640, 320); dh = 320 -> 160 / 160
        LetterboxGeometry(3.2, (640, 320), 160, 160, 0, 0, (640, 640)),
        id="small-image-scaleup",
    ),
    pytest.param(
        480, 640, (320, 480), False, 32, True,
        # r = min(320/480, 480/640) = 2/3; unpad (round(426.67), round(320.0)) = (427, 320)
        # dw = 53 -> 26.5: left = round(26.4) = 26, right = round(26.6) = 27
        LetterboxGeometry(2 / 3, (427, 320), 0, 0, 26, 27, (320, 480)),
        id="non-square-target",
    ),
    pytest.param(
        2, 5, (1, 100), False, 32, True,
        # r = min(1/2, 100/5) = 0.5; w * r = 2.5 rounds half to even (Python round) -> 2
        # dw = 98 -> 49 / 49, dh = 0
        LetterboxGeometry(0.5, (2, 1), 0, 0, 49, 49, (1, 100)),
        id="round-half-to-even",
    ),
]


@pytest.mark.parametrize("h, w, new_shape, auto, stride, scaleup, expected", HAND_CASES)
def test_geometry_matches_hand_computation(h, w, new_shape, auto, stride, scaleup, expected):
    geometry = letterbox_geometry(h, w, new_shape, auto=auto, stride=stride, scaleup=scaleup)
    assert geometry.ratio == pytest.approx(expected.ratio)
    assert (geometry.new_unpad, geometry.out_shape) == (expected.new_unpad, expected.out_shape)
    assert (geometry.pad_top, geometry.pad_bottom, geometry.pad_left, geometry.pad_right) == (
        expected.pad_top, expected.pad_bottom, expected.pad_left, expected.pad_right,
    )


def test_auto_output_is_a_stride_multiple_no_larger_than_target():
    for h, w in [(427, 640), (333, 500), (640, 359), (17, 23), (1000, 999)]:
        geometry = letterbox_geometry(h, w, 640, auto=True, stride=32)
        out_h, out_w = geometry.out_shape
        assert out_h % 32 == 0 and out_w % 32 == 0
        assert out_h <= 640 and out_w <= 640
        assert max(geometry.new_unpad) == 640


def test_geometry_is_frozen():
    geometry = letterbox_geometry(480, 640, 640, auto=False)
    with pytest.raises(AttributeError):
        geometry.pad_top = 0


def _random_image(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


@pytest.mark.parametrize("h, w, new_shape, auto, stride, scaleup, expected", HAND_CASES)
def test_image_padding_and_content(h, w, new_shape, auto, stride, scaleup, expected):
    image = _random_image(h, w)
    color = (1, 2, 3)  # not the default, so the argument must really be used
    padded, geometry = letterbox(image, new_shape, color=color, auto=auto, stride=stride, scaleup=scaleup)

    assert padded.shape == (*expected.out_shape, 3)
    assert padded.dtype == np.uint8

    unpad_w, unpad_h = geometry.new_unpad
    top, left = geometry.pad_top, geometry.pad_left
    content = padded[top:top + unpad_h, left:left + unpad_w]
    if (unpad_w, unpad_h) == (w, h):
        np.testing.assert_array_equal(content, image)
    else:
        np.testing.assert_array_equal(content, cv2.resize(image, (unpad_w, unpad_h), interpolation=cv2.INTER_LINEAR))

    padding = np.ones(padded.shape[:2], dtype=bool)
    padding[top:top + unpad_h, left:left + unpad_w] = False
    assert padding.sum() == padded.shape[0] * padded.shape[1] - unpad_w * unpad_h
    assert (padded[padding] == np.array(color, dtype=np.uint8)).all()


def test_default_colour_is_reference_grey():
    padded, geometry = letterbox(_random_image(480, 640), 640)
    assert (padded[: geometry.pad_top] == 114).all()
    assert (padded[-geometry.pad_bottom:] == 114).all()


def test_input_image_is_not_modified():
    image = _random_image(100, 200)
    before = image.copy()
    letterbox(image, 640)
    np.testing.assert_array_equal(image, before)


# test.py's rectangles for a batch, worked out by hand at img_size 320, stride 32 (10 strides): landscape batches
# are as tall as their squarest image, portrait ones as wide, mixed ones square; every side gets half a stride more.
@pytest.mark.parametrize("sizes, expected", [
    ([(240, 320)], (256, 352)),  # h/w 0.75: ceil(7.5 + 0.5) = 8 strides high, ceil(10 + 0.5) = 11 wide
    ([(240, 320), (180, 320)], (256, 352)),  # the squarest (0.75) sets the height
    ([(320, 240)], (352, 256)),  # portrait: w/h 0.75
    ([(320, 320)], (352, 352)),
    ([(240, 320), (320, 240)], (352, 352)),  # mixed: a square
    ([(100, 1000)], (64, 352)),  # h/w 0.1: ceil(1 + 0.5) = 2 strides
])
def test_evaluation_shape_by_hand(sizes, expected):
    assert evaluation_shape(sizes, 320, 32) == expected


def test_evaluation_geometry_by_hand():
    # 300x400 -> long side 320, scale 0.8: 240x320 (truncated); in 256x352: 8 + 8 rows, 16 + 16 columns
    assert evaluation_geometry(300, 400, 320, (256, 352)) == LetterboxGeometry(0.8, (320, 240), 8, 8, 16, 16, (256, 352))
    # 333x500 -> scale 0.64: 213.12 truncates to 213 rows; odd padding 43 gives the odd row to the bottom;
    # boxes map back with the height's own gain, 213 / 333, as test.py's do
    geometry = evaluation_geometry(333, 500, 320, (256, 352))
    assert (geometry.new_unpad, geometry.pad_top, geometry.pad_bottom) == ((320, 213), 21, 22)
    assert geometry.ratio == pytest.approx(213 / 333)
    # A small image is enlarged: 100x200 -> 160x320
    assert evaluation_geometry(100, 200, 320, (192, 352)).new_unpad == (320, 160)
    with pytest.raises(ValueError, match="does not fit"):
        evaluation_geometry(320, 320, 320, (256, 352))


def test_evaluation_letterbox_shrinks_by_pixel_area_and_enlarges_bilinearly():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)
    padded, geometry = evaluation_letterbox(image, 320, (256, 352))
    inside = padded[8:248, 16:336]
    assert padded.shape == (256, 352, 3) and (padded[:8] == 114).all() and (padded[:, :16] == 114).all()
    assert np.array_equal(inside, cv2.resize(image, (320, 240), interpolation=cv2.INTER_AREA))
    assert not np.array_equal(inside, cv2.resize(image, (320, 240), interpolation=cv2.INTER_LINEAR))
    small = image[:100, :200]
    enlarged, _ = evaluation_letterbox(small, 320, (192, 352))
    assert np.array_equal(enlarged[16:176, 16:336], cv2.resize(small, (320, 160), interpolation=cv2.INTER_LINEAR))


def test_pad_resize_corner_takes_one_scale_the_longer_side_over_the_input():
    # 480 x 640 padded to 640 x 640, then to 320: 0.5 on both axes; portrait 500 x 375 to a square of 500.
    assert square_pad_geometry(480, 640, (320, 320)) == SquarePad(640, 0.5, 0.5)
    assert square_pad_geometry(500, 375, (320, 320)) == SquarePad(500, 0.64, 0.64)
    # A non-square input stretches the square: 800 x 608 from a square of 1000.
    assert square_pad_geometry(1000, 700, (800, 608)) == SquarePad(1000, 0.608, 0.8)
    with pytest.raises(ValueError):
        square_pad_geometry(0, 10, (32, 32))


def test_pad_to_square_pads_at_the_bottom_and_right_only():
    image = np.full((2, 3, 3), 200, np.uint8)
    padded = pad_to_square(image, 7)
    assert padded.shape == (3, 3, 3)
    assert (padded[:2] == 200).all() and (padded[2] == 7).all()  # the image's rows first, the pad below
    tall = pad_to_square(np.full((3, 1, 3), 200, np.uint8), 0)
    assert (tall[:, 0] == 200).all() and (tall[:, 1:] == 0).all()  # the pad to the right
    square = np.zeros((4, 4, 3), np.uint8)
    assert pad_to_square(square, 114) is square


def test_pad_resize_corner_blends_the_pads_edge_where_resize_then_pad_does_not():
    # 2 x 4 of 200 padded with 0 to 4 x 4, then halved: the row at the image's bottom edge mixes image and pad.
    padded = cv2.resize(pad_to_square(np.full((2, 4, 3), 200, np.uint8), 0), (2, 2), interpolation=cv2.INTER_LINEAR)
    assert padded[0, 0, 0] == 200 and padded[1, 0, 0] == 0
    odd = cv2.resize(pad_to_square(np.full((3, 4, 3), 200, np.uint8), 0), (2, 2), interpolation=cv2.INTER_LINEAR)
    assert 0 < odd[1, 0, 0] < 200  # the third image row and the pad's first, blended
