"""An image's upright size read from its header alone, without decoding a pixel.

Sizes are needed before decoding twice: to refuse an image too large to decode safely, and to know which
input shapes a run will see before its timed passes. Pillow's `open` is lazy (it parses the header only),
and the EXIF orientation says whether the upright image is the stored one turned by 90 degrees.
"""
from __future__ import annotations

import io
import struct
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Optional

from PIL import Image, ImageFile

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


def read_header(source: str | Path | bytes) -> Optional[ImageHeader]:
    """The upright size the header declares (of a file, or of a file's bytes), or None where Pillow cannot
    parse the header (the decoder may still read the file; datasets.size_probe may still find its size)."""
    try:
        with _opened(source) as stream, _identified(stream) as image:
            if image is None:
                return None
            width, height = image.size
            try:
                orientation = image.getexif().get(_EXIF_ORIENTATION)
            except Exception:  # a broken EXIF block does not change the stored size
                orientation = None
    except (OSError, ValueError, SyntaxError, EOFError, struct.error, IndexError, TypeError, KeyError):
        return None
    if width <= 0 or height <= 0:
        return None
    if orientation in _TRANSPOSED_ORIENTATIONS:
        width, height = height, width
    return ImageHeader(width, height)


def _opened(source: str | Path | bytes) -> IO[bytes]:
    return io.BytesIO(source) if isinstance(source, (bytes, bytearray, memoryview)) else open(source, "rb")


@contextmanager
def _identified(stream: IO[bytes]) -> Iterator[Optional[ImageFile.ImageFile]]:
    """What Image.open does to identify a file, without its decompression-bomb check: that check reads
    Image.MAX_IMAGE_PIXELS, a setting of the whole process, which another thread decoding at the same time
    must keep seeing as it is. The size is what the caller judges; no pixel is decoded here."""
    Image.init()
    prefix = stream.read(16)
    for name in list(Image.ID):
        factory, accept = Image.OPEN[name]
        if accept is not None:
            verdict = accept(prefix)
            if not verdict or isinstance(verdict, str):
                continue
        stream.seek(0)
        try:
            image = factory(stream, "")
        except (SyntaxError, IndexError, TypeError, struct.error, OSError, ValueError, EOFError, KeyError):
            continue
        try:
            yield image
        finally:
            image.close()
        return
    yield None
