"""pipelines/exported/recipe.py: a layout's recipe overridden key by key, and said in words."""
from pipelines.exported.recipe import IMAGENET, YOLO, Recipe


def test_only_the_keys_set_replace_the_layouts_own():
    recipe = YOLO.with_keys({"resize": "stretch", "channels": None, "mean": [0.5, 0.5, 0.5], "img_size": 320})
    assert (recipe.resize, recipe.channels, recipe.mean) == ("stretch", "rgb", (0.5, 0.5, 0.5))
    assert YOLO.resize == "letterbox"  # frozen: the layout's recipe is left as it was


def test_the_words_name_each_step_a_reader_checks():
    assert YOLO.words() == "letterbox centred, pad 114; OpenCV linear on the 8-bit image; RGB; / 255"
    words = Recipe(inset=2, mean=IMAGENET[0], std=IMAGENET[1], input_type="uint8", scale=1.0).words()
    assert "2 pixels inside each edge" in words and "ImageNet mean and std" in words and "0-255" in words
    assert words.endswith("fed as uint8")
    assert "mean [0.5, 0.5, 0.5]" in Recipe(mean=(0.5, 0.5, 0.5)).words()
    assert YOLO.describe()["pad_value"] == 114
