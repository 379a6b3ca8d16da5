"""A decoded frame as the image every source yields: BGR uint8, turned upright as players show it."""
from __future__ import annotations

from fractions import Fraction
from typing import Optional

import av
import numpy as np

# FFmpeg's decoders may use frame threads (each delays a frame by one) and slice threads; AUTO lets it pick.
THREAD_TYPE = "AUTO"


def configure_decoder(stream: av.video.stream.VideoStream, threads: int) -> None:
    """The decoder's thread count (0: one per core, FFmpeg's choice), set before the first packet."""
    context = stream.codec_context
    context.thread_count = threads
    if threads != 1:
        context.thread_type = THREAD_TYPE


def upright_bgr(frame: av.VideoFrame) -> np.ndarray:
    """The frame in BGR, turned by its display matrix (a phone's portrait clip) as FFmpeg's player turns it:
    `rotation` is counter-clockwise degrees, as np.rot90 turns."""
    image = frame.to_ndarray(format="bgr24")
    turns = round(frame.rotation / 90) % 4
    return np.ascontiguousarray(np.rot90(image, turns)) if turns else image


def upright_size(width: int, height: int, rotation: float) -> tuple[int, int]:
    """(width, height) once turned by `rotation` degrees."""
    return (height, width) if round(rotation / 90) % 2 else (width, height)


def frame_seconds(frame: av.VideoFrame, stream_time_base: Optional[Fraction]) -> Optional[float]:
    """The frame's timestamp in seconds as its source gives it (no shift to 0, no regularising). The frames a
    flushed decoder gives out carry no time base of their own: theirs is the stream's."""
    time_base = frame.time_base or stream_time_base
    return None if frame.pts is None or time_base is None else float(frame.pts * time_base)


def packet_seconds(packet: av.Packet) -> Optional[float]:
    return None if packet.pts is None or packet.time_base is None else float(packet.pts * packet.time_base)


def pixels_refusal(width: int, height: int, max_pixels: Optional[int]) -> Optional[str]:
    """Why frames of this size are refused, or None."""
    if max_pixels is None or width * height <= max_pixels:
        return None
    return (f"has frames of {width}x{height}, {width * height:,} pixels, above dataset.max_pixels {max_pixels:,} "
            "(every frame of a stream has that size); raise dataset.max_pixels, or set it to null to lift the limit")
