"""Layer paths as chart labels (utils/measure/layers/path_labels.py): the end of a long path kept, the part that tells
layers apart."""
from utils.measure.layers.path_labels import LABEL_WIDTH, shorten


def test_a_long_path_keeps_its_end_within_the_width():
    path = "model." + ".".join(f"block{index}" for index in range(20))
    label = shorten(path)
    assert len(label) == LABEL_WIDTH and label.startswith("…") and label.endswith("block19")
    assert shorten("model.0.conv") == "model.0.conv" and shorten("abcdef", width=4) == "…def"
    assert shorten(77) == "77"
