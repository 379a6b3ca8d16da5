"""A video file looked at once, at start-up, before any frame is timed: that FFmpeg reads it, that it holds a
video stream it can decode and whose frames dataset.max_pixels allows, its frames' timestamps (from the packets,
without decoding) and how it is turned. Every failure is a DatasetError naming the file and the fix."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import av

from datasets.dataset_root import DatasetError
from datasets.sources.failures import ffmpeg_words
from datasets.sources.frame_image import configure_decoder, packet_seconds, pixels_refusal, upright_size
from datasets.sources.locations import shown_location

REENCODE = "re-encode it, e.g. `ffmpeg -i {name} -c:v libx264 -pix_fmt yuv420p fixed.mp4`"


@dataclass(frozen=True)
class VideoInfo:
    path: Path
    codec: str  # FFmpeg's decoder name, e.g. h264
    width: int  # of the upright frames
    height: int
    fps: Optional[float]  # the stream's average frame rate, where the container says it
    # Each frame's pts in seconds, in presentation order, from the packets (None: the file has no timestamps)
    timestamps: tuple[Optional[float], ...]
    corrupt_packets: int  # packets the demuxer flagged corrupt
    truncated: Optional[str]  # the demuxer's error where the data ended early, None when it ended cleanly
    # Frames the decoder holds back to put B-frames in order (FFmpeg's has_b_frames): a frame read as it arrives
    # comes out that many frame intervals later
    reorder_frames: int = 0

    @property
    def frames(self) -> int:
        return len(self.timestamps)


def _refuse(path: Path, why: str, fix: str) -> DatasetError:
    return DatasetError(f"video {shown_location(path)} {why}; {fix.format(name=path.name)}")


def open_video(path: Path) -> av.container.InputContainer:
    """The file opened by FFmpeg, or DatasetError saying why not."""
    try:
        return av.open(str(path))
    except av.error.FileNotFoundError:
        raise _refuse(path, "does not exist", "check dataset.path") from None
    except av.error.PermissionError:
        raise _refuse(path, "cannot be read (permission denied)", "make it readable") from None
    except av.error.InvalidDataError:
        raise _refuse(path, "is not a video FFmpeg can read (invalid data; a file cut short loses the index an "
                      "mp4 or mov keeps at its end, and reads so too)", "download or copy it again, or "
                      + REENCODE) from None
    except (av.error.FFmpegError, OSError) as error:
        raise _refuse(path, f"cannot be opened: {ffmpeg_words(error)}", "check the file, or " + REENCODE) from None


def video_stream(container: av.container.InputContainer, path: Path) -> av.video.stream.VideoStream:
    """The file's first video stream, refused when there is none or FFmpeg has no decoder for it."""
    if not container.streams.video:
        kinds = ", ".join(sorted({stream.type for stream in container.streams})) or "none"
        raise _refuse(path, f"holds no video stream (its streams: {kinds})", "point dataset.path at a video")
    stream = container.streams.video[0]
    if stream.codec_context is None:
        raise _refuse(path, "is in a video codec this FFmpeg (PyAV's) has no decoder for", REENCODE)
    return stream


def probe_video(path: Path, max_pixels: Optional[int]) -> VideoInfo:
    with open_video(path) as container:
        stream = video_stream(container, path)
        context = stream.codec_context
        refusal = pixels_refusal(context.width, context.height, max_pixels)
        if refusal is not None:
            raise DatasetError(f"video {shown_location(path)} {refusal}")
        pts, corrupt, truncated = [], 0, None
        try:
            for packet in container.demux(stream):
                if packet.size == 0:
                    continue  # the demuxer's end marker
                pts.append(packet_seconds(packet))
                corrupt += packet.is_corrupt
        except av.error.FFmpegError as error:
            truncated = ffmpeg_words(error)
        fps = float(stream.average_rate) if stream.average_rate else None
        reorder = context.has_b_frames
    timestamps = tuple(sorted(pts)) if pts and None not in pts else (None,) * len(pts)
    rotation, codec = _first_frame(path, max_pixels)
    width, height = upright_size(context.width, context.height, rotation)
    return VideoInfo(path, codec, width, height, fps, timestamps, corrupt, truncated, reorder)


def _first_frame(path: Path, max_pixels: Optional[int]) -> tuple[float, str]:
    """The first frame's rotation and the decoder's name: decoding one frame shows the decoder works here."""
    with open_video(path) as container:
        stream = video_stream(container, path)
        configure_decoder(stream, 1)
        try:
            for packet in container.demux(stream):
                for frame in _decoded(packet):
                    refusal = pixels_refusal(frame.width, frame.height, max_pixels)
                    if refusal is not None:
                        raise DatasetError(f"video {shown_location(path)} {refusal}")
                    return frame.rotation, stream.codec_context.name
        except av.error.FFmpegError as error:
            raise _refuse(path, f"could not be read to its first frame: {ffmpeg_words(error)}", REENCODE) from None
    raise _refuse(path, "holds no frame that decodes", REENCODE)


def _decoded(packet: av.Packet) -> list[av.VideoFrame]:
    try:
        return packet.decode()
    except av.error.InvalidDataError:
        return []  # a corrupt packet before the first good frame: the next key frame starts it
