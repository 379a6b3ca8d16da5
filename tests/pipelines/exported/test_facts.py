"""pipelines/exported/facts.py: the defaults a file's own shapes and its layout give a run."""
from types import SimpleNamespace

from pipelines.exported import facts
from pipelines.exported.layouts import yolox
from tests.support.exported_files import exported


def test_a_static_graph_fixes_the_input_and_a_dynamic_one_takes_img_size():
    fixed = exported([], [("images", (2, 3, 96, 160))])
    assert facts.input_hw(fixed, 640) == (96, 160) and facts.static_size(fixed) == 160
    assert facts.static_batch(fixed) == 2
    dynamic = exported([], [("images", ("N", 3, "H", "W"))])
    assert facts.input_hw(dynamic, 320) == (320, 320) and facts.static_size(dynamic) is None
    assert facts.static_batch(dynamic) is None
    channels_last = exported([], [("input", (1, 192, 256, 3))], format="tflite")
    assert facts.input_hw(channels_last, None) == (192, 256)


def test_the_recipe_defaults_are_the_layouts_with_the_files_own_input_type():
    defaults = facts.recipe_defaults(yolox, exported([], [("images", (1, 3, 64, 64), "uint8")]))
    assert (defaults["resize"], defaults["channels"], defaults["scale"]) == ("letterbox_corner", "bgr", 1.0)
    assert defaults["input_type"] == "uint8"
    assert facts.own_input_type(exported([], [("images", (1, 3, 64, 64), "float64")])) == "float32"
    assert facts.head_of(SimpleNamespace(head="yolox")) == "yolox" and facts.head_of(None) is None
