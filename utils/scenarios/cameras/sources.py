"""The cameras of a run, built and looked at once at start-up: each location (a video file, a folder of videos
or a stream URL) becomes a source, its first frame decoded (a stream's connection opened and closed again), so a
file FFmpeg cannot read, a URL that never answers or frames above dataset.max_pixels end the run at start with
exit status 2, naming the config key and the location."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

import numpy as np

from datasets.dataset_root import DatasetError
from datasets.sources.dataset import IMAGES, DatasetSource, find_dataset
from datasets.sources.live import LiveStream
from datasets.sources.locations import VIDEO_SUFFIXES, is_stream_url, is_video_file, shown_location
from datasets.sources.source import Source
from utils.scenarios.cameras.settings import CameraSettings


@dataclass(frozen=True)
class Camera:
    """One camera: its source and how its frames are named. A file's frames keep their video's index and pts, a
    file that loops numbering them on (`loop_frames`, `loop_span_s` per video path); a stream's are its own."""

    index: int
    location: str  # as shown: a URL's password masked
    source: Source
    arrives: bool  # frames come at the source's pace (a stream, a file in real time): a busy detector drops them
    loops: bool  # a file in real time starts again at its end
    first_frame: np.ndarray  # BGR, to warm the detector's input shapes up before the cameras start
    names_root: Optional[Path] = None  # a file's videos are named relative to it; None: a stream
    loop_frames: tuple[tuple[str, int], ...] = ()  # (video path, its frames)
    loop_span_s: tuple[tuple[str, float], ...] = ()  # (video path, the time its frames span)

    @property
    def name(self) -> str:
        return f"cam{self.index}"

    def label(self, path: str) -> str:
        """What detections.csv's `image` column calls a frame of this camera: the camera, then its video's path
        relative to the source (annotated frames go under images/ by it); a stream is the camera alone."""
        if self.names_root is None:
            return self.name
        try:
            relative = Path(path).relative_to(self.names_root).as_posix()
        except ValueError:
            relative = Path(path).name
        return f"{self.name}/{relative}"


def build_cameras(settings: CameraSettings) -> list[Camera]:
    """Every camera, in order; DatasetError (exit status 2) for one that cannot be read, naming its key."""
    cameras: list[Camera] = []
    for index, (location, key) in enumerate(zip(settings.locations, settings.keys)):
        if is_stream_url(location):
            cameras.append(_stream(index, location, key, settings))
        else:
            cameras.append(_files(index, location, key, settings))
    return cameras


def _stream(index: int, url: str, key: str, settings: CameraSettings) -> Camera:
    live = LiveStream(url, settings.decode, settings.stream)
    try:
        with live.open() as reading:
            first = next((item for item in reading if item.image is not None), None)
    except DatasetError as error:
        raise DatasetError(f"{key}: {error}") from None
    if first is None:
        raise DatasetError(f"{key}: stream {shown_location(url)} gave no frame that decodes (within its read timeout "
                           f"{settings.stream.read_timeout_s:g} s and {settings.stream.reconnects} reconnect(s)); "
                           "check that the camera sends video")
    return Camera(index, shown_location(url), live, True, False, first.image)


def _files(index: int, location: str, key: str, settings: CameraSettings) -> Camera:
    path = Path(location)
    shown = shown_location(location)
    if not path.exists():
        raise DatasetError(f"{key} {shown} does not exist; give a video file ({', '.join(VIDEO_SUFFIXES)}), a "
                           "folder of videos, or a stream URL (rtsp://, http://, ...)")
    if path.is_file() and not is_video_file(path):
        raise DatasetError(f"{key} {shown} is a file but not a video ({', '.join(VIDEO_SUFFIXES)}); cameras read "
                           "video files and streams")
    dataset = find_dataset(path, settings.limit, settings.decode)
    if dataset.kind == IMAGES:
        raise DatasetError(f"{key} {shown} is a folder of images; cameras read video files and streams: point it "
                           "at a video or a folder of videos, or set benchmark.scenario single_stream")
    realtime = settings.realtime
    source = replace(dataset, videos=tuple(replace(video, realtime=realtime) for video in dataset.videos))
    return Camera(index, shown, source, realtime, realtime, _first_frame(source, key, shown), dataset.root,
                  tuple((video.name, video.info.frames) for video in source.videos),
                  tuple((video.name, _span_s(video.info.timestamps, video.info.fps)) for video in source.videos))


def _first_frame(source: DatasetSource, key: str, shown: str) -> np.ndarray:
    first = source.videos[0].refs()[0]
    video = replace(source.videos[0], realtime=False, limit=1)
    with video.open() as reading:
        item = next((item for item in reading if item.image is not None), None)
    if item is None:
        raise DatasetError(f"{key} {shown}: frame {first.index} of {first.video.name} does not decode; re-encode it, "
                           "e.g. `ffmpeg -i in.mp4 -c:v libx264 -pix_fmt yuv420p fixed.mp4`")
    return item.image


def _span_s(timestamps: tuple[Optional[float], ...], fps: Optional[float]) -> float:
    """The time one play of a video covers: its first frame's to its last's, plus one frame."""
    known = [stamp for stamp in timestamps if stamp is not None]
    if len(known) < 2:
        return 1.0 / fps if fps else 0.0
    step = (known[-1] - known[0]) / (len(known) - 1)
    return known[-1] - known[0] + (1.0 / fps if fps else step)


def reorder_warning(camera: Camera) -> Optional[str]:
    """For a camera whose frames arrive at their pace from a file with B-frames: how late its decoder gives each
    frame out, which its latency from arrival counts; None where no frame waits (cameras send no B-frames)."""
    if not camera.arrives or camera.names_root is None:
        return None
    held = [video.info for video in camera.source.videos if video.info.reorder_frames]
    if not held:
        return None
    info = max(held, key=lambda video: video.reorder_frames / (video.fps or 1.0))
    delay = f", {1000 * info.reorder_frames / info.fps:.0f} ms at its {info.fps:g} fps" if info.fps else ""
    return (f"camera {camera.name} ({camera.location}): {info.path.name} has B-frames, so its decoder holds "
            f"{info.reorder_frames} frame(s) back to reorder them{delay}: every frame's latency from arrival counts "
            "that wait, which a camera (no B-frames) does not have; to measure as a camera feeds it, re-encode "
            f"without them: `ffmpeg -i {info.path.name} -c:v libx264 -bf 0 -pix_fmt yuv420p camera.mp4`")
