"""FFmpeg's failures (PyAV's exceptions) as reasons a person can act on, naming the file or URL."""
from __future__ import annotations

import av

# PyAV reports a read its timeout interrupted as "Immediate exit requested"; RTSP, as invalid data. A failure
# after nearly the whole timeout is taken as the timeout.
_TIMEOUT_SHARE = 0.9


def ffmpeg_words(error: BaseException) -> str:
    """FFmpeg's own words for the failure, without the location PyAV appends."""
    words = getattr(error, "strerror", None) or str(error)
    return str(words).strip()[:200]


def stream_failure(error: BaseException, elapsed_s: float, timeout_s: float, doing: str) -> str:
    """Why opening or reading a stream failed; `doing` is what was waited for ("to connect", "for data")."""
    if isinstance(error, av.error.ExitError) or elapsed_s >= _TIMEOUT_SHARE * timeout_s:
        return f"no answer {doing} within {timeout_s:g} s"
    if isinstance(error, av.error.ConnectionRefusedError):
        return "the connection was refused (nothing listens at that host and port)"
    if isinstance(error, av.error.ConnectionResetError):
        return "the server reset the connection"
    return f"FFmpeg: {ffmpeg_words(error)}"
