"""Clips made once per session for the source tests (tests/support/clips.py): small ones where the size does not
matter."""
import pytest

from tests.support.clips import moving_shapes, write_clip


@pytest.fixture(scope="session")
def clips(tmp_path_factory):
    """{name: path}: h264 (320x240, 15 fps, 15 frames, B-frames), then 160x120 10-frame ones: h265 in MOV, mpeg4
    in AVI, mjpeg in MKV, vp9 in WebM."""
    folder = tmp_path_factory.mktemp("clips")
    scene = moving_shapes(320, 240, 15)
    small = moving_shapes(160, 120, 10, photo=None)
    return {
        "h264": write_clip(folder / "h264.mp4", scene, options={"preset": "ultrafast", "bframes": "2", "g": "8"}),
        "h265": write_clip(folder / "h265.mov", small, codec="libx265",
                           options={"preset": "ultrafast", "x265-params": "log-level=error"}),
        "mpeg4": write_clip(folder / "mpeg4.avi", small, codec="mpeg4"),
        "mjpeg": write_clip(folder / "mjpeg.mkv", small, codec="mjpeg"),
        "vp9": write_clip(folder / "vp9.webm", small, codec="libvpx-vp9", options={"deadline": "realtime",
                                                                                   "cpu-used": "8"}),
    }


@pytest.fixture(scope="session")
def scene():
    return moving_shapes(320, 240, 15)
