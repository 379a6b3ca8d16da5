"""An image's upright size read from its header alone, without decoding a pixel.

Sizes are needed before decoding twice: to refuse an image too large to decode safely, and to know which
input shapes a run will see before its timed passes. Pillow's `open` is lazy (it parses the header only),
and the EXIF orientation says whether the upright image is the stored one turned by 90 degrees.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from PIL import Image, UnidentifiedImageError

# EXIF orientations 5-8 store the image turned by 90 or 270 degrees: its upright width is the stored height.
_TRANSPOSED_ORIENTATIONS = {5, 6, 7, 8}
_EXIF_ORIENTATION = 0x0112


@dataclass(frozen=True)
class ImageHeader:
    width: int  # upright, as the decoder hands the image over (EXIF orientation applied)
    height: int

    @property
    def pixels(self) -> int:
        return self.width * self.height


def read_header(path: str | Path) -> Optional[ImageHeader]:
    """The upright size the header declares, or None where Pillow cannot parse the header (the decoder may
    still read the file; callers then learn the size by decoding)."""
    limit = Image.MAX_IMAGE_PIXELS
    try:
        with warnings.catch_warnings():
            # Pillow's own bomb guard would refuse or warn here; the size is what the caller wants to judge,
            # and no pixel is decoded by Pillow. Its warnings about corrupt tags of a damaged file are left
            # out too: the decoder's verdict on that file is what the run reports.
            warnings.simplefilter("ignore")
            Image.MAX_IMAGE_PIXELS = None
            with Image.open(path) as image:
                width, height = image.size
                try:
                    orientation = image.getexif().get(_EXIF_ORIENTATION)
                except Exception:  # a broken EXIF block does not change the stored size
                    orientation = None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return None
    finally:
        Image.MAX_IMAGE_PIXELS = limit
    if width <= 0 or height <= 0:
        return None
    if orientation in _TRANSPOSED_ORIENTATIONS:
        width, height = height, width
    return ImageHeader(width, height)
