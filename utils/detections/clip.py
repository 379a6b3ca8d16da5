"""An annotated clip a person opens: frames with their detections drawn, encoded as a video (H.264 where the FFmpeg
of the `av` wheel has an encoder for it, else MPEG-4 Part 2), each frame at its own timestamp, so frames a busy
detector dropped show as the previous one held; where neither encoder is at hand, the frames as PNG files in a
folder instead.

What is kept is bounded twice, in frames and in bytes (`ClipFrames`): a reference to each frame's pixels, never a
copy, so keeping costs the measured loop an append; the drawing and the encoding happen after it, from what was
kept.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Optional, Sequence

import av
import cv2
import numpy as np

from pipelines.contract import Detections
from utils.detections.annotate import draw_detections
from utils.detections.writer import detection_rows
from utils.storage.atomic import OutputWriteError, atomic_file, atomic_write_bytes

CODECS = ("libx264", "mpeg4")  # in order of preference: H.264 plays everywhere, MPEG-4 Part 2 nearly so
MAX_BYTES = 192 * 1024 * 1024
TIME_BASE = Fraction(1, 1000)  # timestamps in milliseconds
DEFAULT_FPS = 15.0  # a frame's duration when frames carry no timestamps


@dataclass(frozen=True)
class KeptFrame:
    image: np.ndarray  # BGR, as decoded
    found: Detections  # in the frame's pixels
    pts_s: Optional[float]


@dataclass
class ClipFrames:
    """Frames kept for a clip: the first `limit` offered, while their pixels hold at most `max_bytes`. Safe to offer
    from several threads."""

    limit: int
    max_bytes: int = MAX_BYTES
    frames: list[KeptFrame] = field(default_factory=list)
    held_bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def offer(self, image: np.ndarray, found: Detections, pts_s: Optional[float]) -> bool:
        """Keeps the frame when there is room; False once the clip is full."""
        with self._lock:
            if len(self.frames) >= self.limit or self.held_bytes + image.nbytes > self.max_bytes:
                return False
            self.frames.append(KeptFrame(image, found, pts_s))
            self.held_bytes += image.nbytes
            return True

    @property
    def full(self) -> bool:
        return len(self.frames) >= self.limit


def encoder() -> Optional[str]:
    """The first codec of CODECS this FFmpeg can encode with; None when it has neither."""
    for name in CODECS:
        try:
            av.codec.Codec(name, "w")
            return name
        except (av.FFmpegError, ValueError):
            continue
    return None


def timestamps_ms(pts_s: Sequence[Optional[float]], fps: float = DEFAULT_FPS) -> list[int]:
    """Each frame's presentation time in ms from the first, strictly increasing (a frame without a timestamp, or one
    not after the previous, comes one frame's duration later). Pure."""
    step = max(1, round(1000.0 / fps))
    known = [value for value in pts_s if value is not None]
    origin = known[0] if known else 0.0
    stamps: list[int] = []
    for value in pts_s:
        stamp = round((value - origin) * 1000.0) if value is not None else None
        previous = stamps[-1] if stamps else None
        if stamp is None or (previous is not None and stamp <= previous):
            stamp = 0 if previous is None else previous + step
        stamps.append(stamp)
    return stamps


def _even(image: np.ndarray) -> np.ndarray:
    """4:2:0 video needs even sides: an odd last row or column is left out."""
    height, width = image.shape[:2]
    return image[: height - height % 2, : width - width % 2]


def write_clip(frames: Sequence[KeptFrame], path: Path, names: list[str], note: Optional[str] = None,
               codec: Optional[str] = None) -> Optional[Path]:
    """The frames drawn and encoded to `path` (an .mp4), or, without an encoder, as PNG files in the folder
    `path` without its suffix; returns what was written, None for no frames. `codec`: one of CODECS (default: the
    first at hand). Frames of another size than the first are left out (a video has one size)."""
    if not frames:
        return None
    codec = codec if codec is not None else encoder()
    drawn = [draw_detections(frame.image, detection_rows(frame.found), names, note) for frame in frames]
    if codec is None:
        return _write_pngs(drawn, path.with_suffix(""))
    first = _even(drawn[0])
    height, width = first.shape[:2]
    stamps = timestamps_ms([frame.pts_s for frame in frames])
    try:
        with atomic_file(path, "wb") as handle:
            with av.open(handle, "w", format="mp4") as container:
                stream = container.add_stream(codec, rate=round(DEFAULT_FPS))
                stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
                stream.time_base = TIME_BASE
                for image, stamp in zip(drawn, stamps):
                    image = _even(image)
                    if image.shape[:2] != (height, width):
                        continue
                    picture = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="bgr24")
                    picture.pts, picture.time_base = stamp, TIME_BASE
                    container.mux(stream.encode(picture))
                container.mux(stream.encode())
    except av.FFmpegError as error:
        raise OutputWriteError(path, OSError(f"FFmpeg could not encode the clip with {codec}: {error}")) from None
    return path


def _write_pngs(drawn: Sequence[np.ndarray], folder: Path) -> Path:
    for index, image in enumerate(drawn):
        ok, encoded = cv2.imencode(".png", image)
        if not ok:
            raise OutputWriteError(folder, OSError("OpenCV could not encode a clip frame as PNG"))
        atomic_write_bytes(folder / f"{index:06d}.png", encoded.tobytes())
    return folder
