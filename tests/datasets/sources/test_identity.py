"""A video frame named before it is decoded (datasets/sources/identity.py): its YOLO label file's stem."""
from pathlib import Path

from datasets.sources.identity import FrameRef


def test_a_frames_label_stem_is_its_index_in_six_digits():
    frame = FrameRef(Path("clip.mp4"), 42, 1.4, 640, 480, 300)
    assert frame.label_stem() == "000042"
    assert FrameRef(Path("clip.mp4"), 1234567, None, 640, 480, 2_000_000).label_stem() == "1234567"
