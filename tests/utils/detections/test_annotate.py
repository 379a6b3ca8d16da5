"""utils.detections.annotate: detections drawn onto a copy of an image (boxes, labels, translucent masks), with a red
banner above the image when the weights are random.

Tested on small blank images: the original is left alone, a class keeps one colour, a mask is blended at the
stated opacity, an unknown class is labelled by its number, and the banner adds a strip without hiding a pixel."""
import numpy as np

from utils.detections.annotate import BANNER_BGR, MASK_OPACITY, class_color, draw_detections, with_banner

WHITE = np.full((100, 200, 3), 255, np.uint8)
BOX = np.array([[10, 40, 60, 90, 0.9, 2]], float)  # x1, y1, x2, y2, score, class


def test_class_colors_are_stable_and_differ_between_neighbours():
    assert class_color(2) == class_color(2)
    assert len({class_color(c) for c in range(20)}) == 20
    assert all(0 <= channel <= 255 for channel in class_color(7))


def test_drawing_leaves_the_original_alone_and_marks_only_the_box_and_label():
    out = draw_detections(WHITE, BOX, ["a", "b", "c"])
    assert (WHITE == 255).all() and out.shape == WHITE.shape
    assert (out[60, 10] != 255).any()  # the box's left edge
    assert (out[70, 35] == 255).all()  # inside the box, below its label
    assert (out[5:15, 150:] == 255).all()  # far from it


def test_an_unknown_class_is_labelled_by_its_number():
    assert (draw_detections(WHITE, BOX, ["a"]) == draw_detections(WHITE, BOX, ["x", "y", "2"])).all()


def test_a_mask_is_blended_in_its_class_colour():
    mask = np.zeros((1, 100, 200), bool)
    mask[0, 70:80, 20:30] = True
    out = draw_detections(WHITE, BOX, ["a", "b", "c"], masks=mask)
    expected = [round(MASK_OPACITY * channel + (1 - MASK_OPACITY) * 255) for channel in class_color(2)]
    assert out[75, 25].tolist() == expected
    assert (out[95, 150] == 255).all()


def test_a_note_adds_a_red_banner_above_the_whole_image():
    out = draw_detections(WHITE, BOX, ["a", "b", "c"], note="RANDOM WEIGHTS")
    strip = out.shape[0] - WHITE.shape[0]
    assert strip > 0 and out.shape[1] == WHITE.shape[1]
    assert out[1, 1].tolist() == list(BANNER_BGR)
    assert (out[strip:] == draw_detections(WHITE, BOX, ["a", "b", "c"])).all()


def test_a_banner_shrinks_its_text_to_fit_a_narrow_image():
    narrow, wide = np.zeros((10, 40, 3), np.uint8), np.zeros((10, 2000, 3), np.uint8)
    text = "RANDOM WEIGHTS (seed 0): boxes are not real detections"
    shrunk, kept = with_banner(narrow, text, 0.5), with_banner(wide, text, 0.5)
    assert shrunk.shape[1] == 40 and kept.shape[1] == 2000
    assert shrunk.shape[0] - 10 < kept.shape[0] - 10
