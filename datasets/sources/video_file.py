"""A video file as a source: its frames decoded in order, the selected ones handed on as BGR with their index
and timestamp, each frame its packets announced but the decoder never gave out handed on as an error item (so
labels, counts and skipped.csv stay aligned), corrupt packets counted and skipped. `realtime` plays the file as
a camera would: each packet released at its own time after the first, stamped with its arrival."""
from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Optional

import av

from datasets.image_folder import LoadedImage
from datasets.sources.failures import ffmpeg_words
from datasets.sources.frame_image import configure_decoder, frame_seconds, upright_bgr
from datasets.sources.identity import FrameRef
from datasets.sources.selection import selected_indices
from datasets.sources.settings import DecodeSettings
from datasets.sources.source import Flush, Read, Reading
from datasets.sources.video_probe import VideoInfo, open_video, video_stream


@dataclass(frozen=True)
class VideoFile:
    """A probed file and which of its frames a reading hands on (`limit`: at most that many of them; `only`: of
    those, these indices alone, as a pass that reads some frames back asks)."""

    info: VideoInfo
    settings: DecodeSettings
    realtime: bool = False
    limit: Optional[int] = None
    only: Optional[frozenset[int]] = None

    @property
    def name(self) -> str:
        return str(self.info.path)

    def refs(self) -> list[FrameRef]:
        """The frames a reading hands on, in order, named before any is decoded."""
        chosen = selected_indices(self.info.timestamps, self.settings.selection)[:self.limit]
        if self.only is not None:
            chosen = [index for index in chosen if index in self.only]
        info = self.info
        return [FrameRef(info.path, index, info.timestamps[index], info.width, info.height, info.frames)
                for index in chosen]

    def open(self) -> "FileReading":
        return FileReading(self)


class FileReading(Reading):
    def __init__(self, video: VideoFile):
        super().__init__(video.name)
        self.video = video
        self._refs = {ref.index: ref for ref in video.refs()}
        self._last_wanted = max(self._refs, default=-1)
        timestamps = video.info.timestamps
        self._index_of: dict[float, int] = {}
        for index, pts_s in enumerate(timestamps):
            if pts_s is not None:
                self._index_of.setdefault(pts_s, index)
        self._last = -1  # the index of the frame the decoder gave out last
        self._arrivals: dict[Optional[float], float] = {}  # realtime: a frame's packet's arrival, by pts
        self._time_base: Optional[Fraction] = None

    def _read(self) -> Iterator[Read]:
        if self._last_wanted < 0:
            self.book.end("no frame selected")
            return
        with open_video(self.video.info.path) as container:
            stream = video_stream(container, self.video.info.path)
            configure_decoder(stream, self.video.settings.threads)
            self._time_base = stream.time_base
            packets = container.demux(stream)
            anchor: Optional[tuple[float, float]] = None  # realtime: the first packet's stamp and arrival
            while not self.stopped and self._last < self._last_wanted:
                try:
                    packet = next(packets)
                except StopIteration:
                    break
                except av.error.FFmpegError as error:
                    self.book.end(f"the data ends early: {ffmpeg_words(error)}")
                    break
                if packet.size == 0:
                    continue
                self.book.add(arrived=1)
                arrival = None
                if self.video.realtime:
                    anchor, arrival = self._pace(packet, anchor)
                    if arrival is None:
                        break
                yield Read(packet, arrival)
            yield Read(Flush(stream))
        self.book.end("stopped" if self.stopped else "end of file")

    def _pace(self, packet: av.Packet, anchor: Optional[tuple[float, float]]
              ) -> tuple[Optional[tuple[float, float]], Optional[float]]:
        """Waits until the packet's time after the first packet's arrival (its decode timestamp: the order a camera
        sends them in); (the first packet's stamp and arrival, this one's arrival), or an arrival None when stopped
        meanwhile. Timed from the first packet's arrival, not from opening: a slow first read delays the play, and
        never brings a later frame forward."""
        stamp = packet.dts if packet.dts is not None else packet.pts
        at = None if stamp is None else float(stamp * packet.time_base)
        if at is None:
            return anchor, time.monotonic()
        if anchor is None:
            if self._stop.is_set():
                return anchor, None
            anchor = (at, time.monotonic())
        elif self._stop.wait(max(0.0, anchor[1] + at - anchor[0] - time.monotonic())):
            return anchor, None
        arrival = time.monotonic()
        self._arrivals[None if packet.pts is None else float(packet.pts * packet.time_base)] = arrival
        return anchor, arrival

    def decode(self, read: Read) -> list[LoadedImage]:
        if isinstance(read.payload, Flush):
            items = self._frames(read.payload.stream.decode(None))
            return items if self.stopped else items + self._missing(self._last_wanted + 1)
        packet = read.payload
        if packet.is_corrupt:
            self.book.add(corrupt_packets=1)
            return []
        try:
            decoded = packet.decode()
        except av.error.FFmpegError:
            self.book.add(corrupt_packets=1)
            return []
        return self._frames(decoded)

    def _frames(self, frames: list[av.VideoFrame]) -> list[LoadedImage]:
        items: list[LoadedImage] = []
        for frame in frames:
            self.book.add(decoded=1, concealed_frames=int(frame.is_corrupt))
            pts_s = frame_seconds(frame, self._time_base)
            index = self._index_of.get(pts_s, -1) if pts_s is not None else -1
            index = index if index > self._last else self._last + 1
            items += self._missing(index)
            self._last = index
            if index in self._refs:
                self.book.add(delivered=1)
                items.append(LoadedImage(self.name, upright_bgr(frame), frame=index,
                                         pts_s=pts_s if pts_s is not None else self._refs[index].pts_s,
                                         arrival_s=self._arrivals.pop(pts_s, None)))
        return items

    def _missing(self, before: int) -> list[LoadedImage]:
        """Error items for the selected frames between the last given out and `before`, which never came."""
        missing = [self._refs[index] for index in range(self._last + 1, before) if index in self._refs]
        self._last = max(self._last, before - 1)
        self.book.add(not_decoded=len(missing))
        return [LoadedImage(self.name, None, f"frame {ref.index} was not decoded (its data is corrupt or missing)",
                            frame=ref.index, pts_s=ref.pts_s) for ref in missing]
