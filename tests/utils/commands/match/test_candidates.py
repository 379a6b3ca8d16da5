"""The recipes `match` tries and their order (utils/commands/match/candidates.py), from a layout's recipe."""
from __future__ import annotations

from pipelines.exported.recipe import Recipe
from pipelines.settings import NO_CAP
from utils.commands.match.candidates import (Change, applied, cut_below, decodes, distinct_effects, effect, extended,
                                             flag_value, round_cuts, single_changes)


def test_single_changes_come_most_common_first_and_never_repeat_the_recipe():
    singles = single_changes(Recipe())
    assert [change.step for change in singles[:5]] == ["channels", "resize", "resize", "resize", "pad"]
    assert singles[0].keys == (("channels", "bgr"),)
    assert [dict(change.keys).get("resize") for change in singles[1:4]] == ["letterbox_corner", "pad_resize_corner",
                                                                            "stretch"]
    assert singles[4].keys == (("pad_value", 0),)
    assert all(applied(Recipe(), (change,)) != Recipe() for change in singles)
    normalised = [change for change in singles if change.step == "normalisation"]
    assert len(normalised) == 2  # ImageNet's and 0-255: plain pixels over 255 is the recipe, reversed is itself
    assert not [change for change in single_changes(Recipe(), normalised_outside=False)
                if change.step == "normalisation"]  # a graph taking uint8 normalises itself


def test_recipes_that_do_the_same_to_the_pixels_are_tried_once():
    stretch = (Change("resize", (("resize", "stretch"),)),)
    assert effect(applied(Recipe(), stretch + (Change("pad", (("pad_value", 0),)),))) == \
        effect(applied(Recipe(), stretch))  # a stretch pads nothing
    seen = {effect(Recipe())}
    combos = [stretch, stretch + (Change("pad", (("pad_value", 0),)),), (Change("channels", (("channels", "bgr"),)),)]
    assert list(distinct_effects(Recipe(), combos, seen)) == [combos[0], combos[2]]


def test_the_best_recipe_is_extended_by_each_other_step_best_single_first():
    bgr, corner, pad = (Change("channels", (("channels", "bgr"),)), Change("resize", (("resize", "stretch"),)),
                        Change("pad", (("pad_value", 0),)))
    other_resize = Change("resize", (("resize", "letterbox_corner"),))
    assert extended((bgr,), [pad, other_resize, bgr, corner]) == [(bgr, pad), (bgr, other_resize), (bgr, corner)]
    assert extended((bgr, corner), [pad, other_resize]) == [(bgr, corner, pad)]


def test_decodes_vary_nms_where_it_follows_and_the_cap_where_the_application_reached_it():
    nms = decodes(True, 0.7, False, 300, 0.24, 12)
    assert nms[0].as_dict() == {"conf_thres": 0.24, "iou_thres": 0.7, "agnostic": False, "max_det": 300}
    assert len(nms) == 10 and {d.as_dict()["agnostic"] for d in nms} == {False, True}
    assert {d.as_dict()["iou_thres"] for d in nms} == {0.45, 0.5, 0.6, 0.65, 0.7}
    rows = decodes(False, 0.7, False, 100, 0.3, 100)
    assert [d.as_dict() for d in rows] == [{"conf_thres": 0.3, "max_det": 100}, {"conf_thres": 0.3, "max_det": NO_CAP}]


def test_the_cut_stands_below_the_lowest_score_and_round_cuts_keep_every_score():
    assert cut_below(0.25891) == 0.24891 and cut_below(0.004) == 0.0
    assert round_cuts(0.2589)[:3] == [0.25, 0.2, 0.15] and round_cuts(0.25) == round_cuts(0.2500001)[1:]
    assert flag_value((0.485, 0.456, 0.406)) == "[0.485,0.456,0.406]" and flag_value(True) == "true"
