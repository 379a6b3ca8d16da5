"""What a source's location names (a video file by its suffix, a stream by its URL scheme), and how it is
shown in messages: a URL's password never is."""
from __future__ import annotations

import re
from pathlib import Path

from utils.core.bounded_text import LIMIT, clipped

VIDEO_SUFFIXES = (".mp4", ".m4v", ".mkv", ".avi", ".mov", ".webm", ".ts", ".mts", ".mpg", ".mpeg")
# What FFmpeg reads as a live stream here: rtsp(s) cameras, http(s) MJPEG and HLS, and the usual push protocols.
STREAM_SCHEMES = ("rtsp", "rtsps", "rtmp", "http", "https", "udp", "srt")
_CREDENTIALS = re.compile(r"^([a-z][a-z0-9+.-]*://)([^/@]*)@", re.IGNORECASE)


def is_stream_url(location: str) -> bool:
    scheme, sep, _ = str(location).partition("://")
    return bool(sep) and scheme.lower() in STREAM_SCHEMES


def is_video_file(path: Path) -> bool:
    return path.suffix.lower() in VIDEO_SUFFIXES


def shown_location(location: str | Path) -> str:
    """The location for a message: a URL's user kept and its password masked, clipped to the usual length."""
    def mask(found: re.Match) -> str:
        user = found.group(2).split(":", 1)[0]
        return f"{found.group(1)}{user}:***@" if ":" in found.group(2) else found.group(0)
    return clipped(_CREDENTIALS.sub(mask, str(location)), LIMIT)
