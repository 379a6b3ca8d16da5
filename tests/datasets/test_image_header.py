"""The upright size from the header alone: huge declared sizes, EXIF turns, files Pillow cannot parse."""
import struct

import cv2
import numpy as np
from PIL import Image

from datasets.image_folder import BUNDLED_SAMPLES, decode_image
from datasets.image_header import ImageHeader, read_header


def bmp_header_claiming(width: int, height: int) -> bytes:
    """A 24-bit BMP whose header declares width x height but which carries almost no pixel data."""
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, 0, 2835, 2835, 0, 0)
    body = info + b"\0" * 1024
    return b"BM" + struct.pack("<IHHI", 14 + len(body), 0, 0, 54) + body


def test_matches_the_decoded_size_of_every_sample():
    for path in sorted(BUNDLED_SAMPLES.glob("*.jpg")):
        image = decode_image(path).image
        assert read_header(path) == ImageHeader(image.shape[1], image.shape[0]), path.name


def test_a_huge_declared_size_is_read_without_decoding(tmp_path):
    path = tmp_path / "bomb.bmp"
    path.write_bytes(bmp_header_claiming(60000, 60000))
    header = read_header(path)
    assert header == ImageHeader(60000, 60000)
    assert header.pixels == 3_600_000_000
    assert Image.MAX_IMAGE_PIXELS is not None  # Pillow's own guard is left as it was


def test_exif_orientation_that_turns_the_image_swaps_the_sides(tmp_path):
    stored = np.zeros((40, 100, 3), dtype=np.uint8)
    path = tmp_path / "turned.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to view
    Image.fromarray(stored).save(path, exif=exif)
    assert read_header(path) == ImageHeader(40, 100)
    decoded = decode_image(path).image
    assert (decoded.shape[1], decoded.shape[0]) == (40, 100)


def test_a_file_pillow_cannot_parse_has_no_header(tmp_path):
    path = tmp_path / "noise.jpg"
    path.write_bytes(b"\x89 not an image at all" * 10)
    assert read_header(path) is None
    assert read_header(tmp_path / "missing.png") is None
    assert not cv2.haveImageReader(str(path))
