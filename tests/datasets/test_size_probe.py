"""One decoder gate: every decode goes through decode_image, which applies dataset.max_pixels from the header,
or from a probe of the size fields where Pillow cannot parse the header, before any pixel is decoded; and it
never touches Pillow's process-wide pixel limit."""
from __future__ import annotations

import re
import struct
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from datasets import image_header
from datasets.image_folder import decode_image
from datasets.image_header import read_header
from datasets.size_probe import stored_size
from tests.support.paths import ROOT

PICTURE = (np.arange(30 * 50 * 3) % 251).astype(np.uint8).reshape(30, 50, 3)


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".bmp", ".webp", ".ppm", ".pgm", ".pfm", ".ras", ".hdr", ".gif"])
def test_probe_reads_the_size_fields_of_what_opencv_decodes(suffix):
    source = PICTURE.astype(np.float32) / 255 if suffix in (".pfm", ".hdr") else PICTURE
    data = cv2.imencode(suffix, source[:, :, 0] if suffix == ".pgm" else source)[1].tobytes()
    assert stored_size(data) == (50, 30)


@pytest.mark.parametrize("data", [b"", b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff\xe0\x00\x10JFIF", b"P6\n#c\n",
                                  b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n", b"BM" + b"\0" * 10, b"RIFF\0\0\0\0WEBPVP8 "])
def test_probe_of_too_few_bytes_says_nothing(data):
    assert stored_size(data) is None


def hdr_as_jpg(tmp_path, side: int = 40) -> Path:
    """A Radiance HDR file named .jpg: Pillow cannot parse its header, OpenCV decodes it."""
    path = tmp_path / "radiance.jpg"
    path.write_bytes(cv2.imencode(".hdr", np.full((side, side, 3), 0.5, np.float32))[1].tobytes())
    return path


def test_limit_applies_where_pillow_cannot_parse_the_header(tmp_path):
    path = hdr_as_jpg(tmp_path)
    assert read_header(path) is None
    loaded = decode_image(path, max_pixels=1000)
    assert loaded.image is None
    assert "40x40 is 1,600 pixels, above dataset.max_pixels 1,000 (read from the file's size fields, not decoded)" \
        in loaded.error
    assert decode_image(path, max_pixels=1600).image.shape == (40, 40, 3)
    assert decode_image(path, max_pixels=None).image.shape == (40, 40, 3)


def test_an_image_whose_size_no_header_tells_is_refused_while_a_limit_is_set(tmp_path):
    path = tmp_path / "cut.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)  # the signature OpenCV knows, then no IHDR
    loaded = decode_image(path, max_pixels=10**6)
    assert loaded.image is None and "its size cannot be read from its header" in loaded.error
    assert "set dataset.max_pixels to null" in loaded.error
    assert loaded.error != decode_image(path, max_pixels=None).error  # without a limit the decoder's verdict


class RecordingModule:
    """PIL.Image as image_header sees it, noting every attribute set on it."""

    def __init__(self, real):
        object.__setattr__(self, "real", real)
        object.__setattr__(self, "assigned", [])

    def __getattr__(self, name):
        return getattr(self.real, name)

    def __setattr__(self, name, value):
        self.assigned.append(name)
        setattr(self.real, name, value)


def test_reading_a_header_sets_nothing_process_wide(tmp_path, monkeypatch):
    path = tmp_path / "huge.bmp"  # declares 40000x40000: Pillow's own check would refuse it
    info = struct.pack("<IiiHHIIiiII", 40, 40_000, 40_000, 1, 24, 0, 0, 2835, 2835, 0, 0) + b"\0" * 64
    path.write_bytes(b"BM" + struct.pack("<IHHI", 14 + len(info), 0, 0, 54) + info)
    recording = RecordingModule(Image)
    monkeypatch.setattr(image_header, "Image", recording)
    before = Image.MAX_IMAGE_PIXELS
    assert read_header(path) == image_header.ImageHeader(40_000, 40_000)
    assert recording.assigned == [] and Image.MAX_IMAGE_PIXELS == before


def test_another_thread_keeps_seeing_pillows_limit(tmp_path):
    path = tmp_path / "many.png"
    Image.new("RGB", (64, 64)).save(path)
    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            seen.add(Image.MAX_IMAGE_PIXELS)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for _ in range(300):
            assert read_header(path) is not None
    finally:
        done.set()
        watcher.join()
    assert seen == {Image.MAX_IMAGE_PIXELS}


DECODERS = re.compile(r"\b(?:cv2\.imdecode|cv2\.imread|Image\.open)\(")
# Files that may decode: the gate itself, and the writer that reads back the annotated images this run wrote.
ALLOWED = {"datasets/image_folder.py", "utils/reporting/tensorboard_events.py"}


def test_every_decode_of_an_input_goes_through_the_gate():
    offenders = []
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if relative.split("/")[0] in ("tests", "benchmarks", ".venv") or relative in ALLOWED:
            continue
        if DECODERS.search(path.read_text(encoding="utf-8")):
            offenders.append(relative)
    assert offenders == []
