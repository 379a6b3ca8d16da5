"""An image's stored size from the first bytes of its file, for the formats OpenCV decodes where Pillow cannot
read the header (a Radiance HDR, or a damaged JPEG whose frame header is still whole).

Only the size fields are read; nothing is decoded. None when the format is not one of these or the field is
missing, so the caller can refuse rather than decode blind.
"""
from __future__ import annotations

import re
import struct
from typing import Optional

PROBE_BYTES = 1 << 16  # a JPEG's frame header follows its EXIF block, which is at most 64 KiB
_JPEG_FRAMES = set(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}  # SOF0-SOF15 but DHT, JPG and DAC
_PNM_FIELD = re.compile(rb"(?:\s|#[^\n]*\n)*(\d+)")


def stored_size(head: bytes) -> Optional[tuple[int, int]]:
    """(width, height) as stored, or None when these bytes do not say it."""
    for probe in (_png, _jpeg, _bmp, _gif, _webp, _pnm, _sun_raster, _radiance):
        try:
            size = probe(head)
        except (struct.error, ValueError, IndexError):
            size = None
        if size is not None:
            return size if size[0] > 0 and size[1] > 0 else None
    return None


def _png(head: bytes) -> Optional[tuple[int, int]]:
    if head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR":
        return struct.unpack(">II", head[16:24])
    return None


def _jpeg(head: bytes) -> Optional[tuple[int, int]]:
    if head[:2] != b"\xff\xd8":
        return None
    at = 2
    while at + 9 < len(head):
        if head[at] != 0xFF:
            at += 1  # damaged: look for the next marker
            continue
        marker = head[at + 1]
        if marker == 0xFF or marker == 0x01 or 0xD0 <= marker <= 0xD7:
            at += 1 if marker == 0xFF else 2
            continue
        length = struct.unpack(">H", head[at + 2:at + 4])[0]
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", head[at + 5:at + 9])
            return width, height
        at += 2 + length
    return None


def _bmp(head: bytes) -> Optional[tuple[int, int]]:
    if head[:2] != b"BM" or len(head) < 26:
        return None
    if struct.unpack("<I", head[14:18])[0] == 12:  # OS/2 header: 16-bit sides
        return struct.unpack("<HH", head[18:22])
    width, height = struct.unpack("<ii", head[18:26])
    return abs(width), abs(height)  # a negative height stores the rows top-down


def _gif(head: bytes) -> Optional[tuple[int, int]]:
    return struct.unpack("<HH", head[6:10]) if head[:6] in (b"GIF87a", b"GIF89a") else None


def _webp(head: bytes) -> Optional[tuple[int, int]]:
    if head[:4] != b"RIFF" or head[8:12] != b"WEBP":
        return None
    chunk = head[12:16]
    if chunk == b"VP8X":
        return 1 + int.from_bytes(head[24:27], "little"), 1 + int.from_bytes(head[27:30], "little")
    if chunk == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    return None


def _pnm(head: bytes) -> Optional[tuple[int, int]]:
    if len(head) < 3 or head[0:1] != b"P" or head[1:2] not in b"123456fF":
        return None
    first = _PNM_FIELD.match(head, 2)
    second = _PNM_FIELD.match(head, first.end()) if first else None
    return (int(first.group(1)), int(second.group(1))) if second else None


def _sun_raster(head: bytes) -> Optional[tuple[int, int]]:
    return struct.unpack(">II", head[4:12]) if head[:4] == b"\x59\xa6\x6a\x95" else None


def _radiance(head: bytes) -> Optional[tuple[int, int]]:
    if not head.startswith((b"#?RADIANCE", b"#?RGBE")):
        return None
    found = re.search(rb"\n\n([-+])([YX]) (\d+) ([-+])([YX]) (\d+)", head)
    if found is None:
        return None
    first, second = int(found.group(3)), int(found.group(6))
    return (second, first) if found.group(2) == b"Y" else (first, second)
