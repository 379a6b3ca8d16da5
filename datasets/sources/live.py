"""A live stream (rtsp://, http(s):// MJPEG or HLS, ...) as a source, read through PyAV with every blocking
call bounded: the connection by `connect_timeout_s`, each read by `read_timeout_s`. A stream that stalls or
ends is opened again up to `reconnects` times, `reconnect_delay_s` apart; each gap is recorded (start, end,
why, resumed or not) and a stream that does not come back ends the reading cleanly. The first connection's
failure is the user's: a DatasetError naming the URL (its password masked), raised by `open()`.

A stream of known duration (a VOD HLS playlist, a file over HTTP) ends at its end, as a file does. So a dead
stream ends at most `read_timeout_s + reconnects * (reconnect_delay_s + connect_timeout_s)` after
its last packet. Frames are numbered from 0 in the order they are decoded, across reconnects; their pts are
the stream's own (a reconnected stream may start them again), their arrival the time their packet was read.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Optional

import av

from datasets.dataset_root import DatasetError
from datasets.image_folder import LoadedImage
from datasets.sources.counts import Gap
from datasets.sources.failures import stream_failure
from datasets.sources.frame_image import configure_decoder, frame_seconds, packet_seconds, pixels_refusal, upright_bgr
from datasets.sources.locations import shown_location
from datasets.sources.selection import FrameSelector
from datasets.sources.settings import DecodeSettings, StreamSettings
from datasets.sources.source import Flush, Read, Reading

# Packets whose frames never came out (corrupt) would keep their arrival forever: the oldest go past this many.
_PENDING_ARRIVALS = 256
_NETWORK_FIX = ("check that the camera or server is up and that the URL (scheme, host, port, path) is right; a "
                "slow camera needs a longer connect timeout")


@dataclass(frozen=True)
class LiveStream:
    url: str
    decode: DecodeSettings
    settings: StreamSettings

    @property
    def name(self) -> str:
        return self.url

    def open(self) -> "LiveReading":
        return LiveReading(self)


@dataclass(frozen=True)
class _Connection:
    container: av.container.InputContainer
    stream: av.video.stream.VideoStream


class LiveReading(Reading):
    def __init__(self, live: LiveStream):
        super().__init__(live.url)
        self.live = live
        self.shown = shown_location(live.url)
        self._selector = FrameSelector(live.decode.selection)
        self._index = -1
        self._arrivals: dict[Optional[float], float] = {}
        self._time_base: Optional[Fraction] = None
        self._checked_frame = False  # whether a decoded frame's size was checked against max_pixels
        connection, failure, fix = self._connect()
        if connection is None:
            raise DatasetError(f"stream {self.shown}: {failure}; {fix}")
        self._connection = connection

    def _connect(self) -> tuple[Optional[_Connection], str, str]:
        """A connection with its video stream ready to decode, or None with why not and the fix."""
        settings = self.live.settings
        options = {"rtsp_transport": settings.rtsp_transport} if self.live.url.lower().startswith("rtsp") else {}
        started = time.monotonic()
        try:
            container = av.open(self.live.url, options=options,
                                timeout=(settings.connect_timeout_s, settings.read_timeout_s))
        except (av.error.FFmpegError, OSError) as error:
            return None, stream_failure(error, time.monotonic() - started, settings.connect_timeout_s,
                                        "to connect"), _NETWORK_FIX
        refusal = self._refusal(container)
        if refusal is not None:
            container.close()
            return None, *refusal
        stream = container.streams.video[0]
        configure_decoder(stream, self.live.decode.threads)
        self._time_base = stream.time_base
        self._checked_frame = False
        self.book.add(connections=1)
        return _Connection(container, stream), "", ""

    def _refusal(self, container: av.container.InputContainer) -> Optional[tuple[str, str]]:
        if not container.streams.video:
            return "it holds no video stream", "point it at a video stream of the camera or server"
        context = container.streams.video[0].codec_context
        if context is None:
            return ("its video is in a codec this FFmpeg (PyAV's) has no decoder for",
                    "set the camera to H.264, H.265 or MJPEG")
        refusal = pixels_refusal(context.width, context.height, self.live.decode.max_pixels)
        return None if refusal is None else (refusal, "or use the camera's lower-resolution substream")

    def _read(self) -> Iterator[Read]:
        connection: Optional[_Connection] = self._connection
        pending_gap: Optional[tuple[float, str, int]] = None
        try:
            while connection is not None and not self.stopped:
                failure = yield from self._packets(connection, pending_gap)
                pending_gap = None
                yield Read(Flush(connection.stream))
                connection.container.close()
                connection = None
                if failure is None:
                    self.book.end("end of stream")
                elif not self.stopped:
                    connection, pending_gap = self._reconnect(failure)
        finally:
            if connection is not None:
                connection.container.close()
            self.book.end("stopped")

    def _packets(self, connection: _Connection, pending_gap: Optional[tuple[float, str, int]]) -> Iterator[Read]:
        """The connection's packets until it fails or ends; returns why it failed (None: it ended)."""
        packets = connection.container.demux(connection.stream)
        timeout = self.live.settings.read_timeout_s
        while not self.stopped:
            waited = time.monotonic()
            try:
                packet = next(packets)
            except StopIteration:
                # A stream of known duration (a VOD playlist, a file over HTTP) has ended; a live one has failed.
                return None if connection.container.duration is not None else "the stream ended (the server closed it)"
            except (av.error.FFmpegError, OSError) as error:
                return stream_failure(error, time.monotonic() - waited, timeout, "for data")
            if packet.size == 0:
                continue  # the demuxer's end marker: StopIteration follows
            arrival = time.monotonic()
            if pending_gap is not None:
                start, reason, attempts = pending_gap
                self.book.gap(Gap(start, arrival, reason, True, attempts))
                pending_gap = None
            self.book.add(arrived=1)
            self._arrivals[packet_seconds(packet)] = arrival
            if len(self._arrivals) > _PENDING_ARRIVALS:
                del self._arrivals[next(iter(self._arrivals))]
            yield Read(packet, arrival)
        return "stopped"

    def _reconnect(self, failure: str) -> tuple[Optional[_Connection], Optional[tuple[float, str, int]]]:
        """A new connection after `failure`, within the reconnects allowed; None when the stream is given up
        (its gap recorded as not resumed)."""
        settings = self.live.settings
        started, attempts, last = time.monotonic(), 0, failure
        while attempts < settings.reconnects and not self._stop.wait(settings.reconnect_delay_s):
            attempts += 1
            connection, why, _ = self._connect()
            if connection is not None:
                return connection, (started, failure, attempts)
            last = why
        self.book.gap(Gap(started, time.monotonic(), failure, False, attempts))
        self.book.end("stopped" if self.stopped else
                      f"gave up after {attempts} reconnect(s): {failure}" + (f"; then {last}" if last != failure else ""))
        return None, None

    def close(self) -> None:
        if self._reads is None:
            self._connection.container.close()  # opened by open(), never read
        super().close()

    def decode(self, read: Read) -> list[LoadedImage]:
        if isinstance(read.payload, Flush):
            frames = read.payload.stream.decode(None)
            items = self._frames(frames, read)
            self._arrivals.clear()
            return items
        packet = read.payload
        if packet.is_corrupt:
            self.book.add(corrupt_packets=1)
            return []
        try:
            frames = packet.decode()
        except av.error.FFmpegError:
            self.book.add(corrupt_packets=1)
            return []
        return self._frames(frames, read)

    def _frames(self, frames: list[av.VideoFrame], read: Read) -> list[LoadedImage]:
        items: list[LoadedImage] = []
        for frame in frames:
            if not self._checked_frame:
                self._check_size(frame)
            self._index += 1
            self.book.add(decoded=1, concealed_frames=int(frame.is_corrupt))
            pts_s = frame_seconds(frame, self._time_base)
            if self._selector.keep(self._index, pts_s):
                self.book.add(delivered=1)
                items.append(LoadedImage(self.name, upright_bgr(frame), frame=self._index, pts_s=pts_s,
                                         arrival_s=self._arrivals.pop(pts_s, read.arrival_s)))
        return items

    def _check_size(self, frame: av.VideoFrame) -> None:
        """A stream whose header gave no size is judged at its first frame, before it is converted."""
        self._checked_frame = True
        refusal = pixels_refusal(frame.width, frame.height, self.live.decode.max_pixels)
        if refusal is not None:
            self.stop()
            raise DatasetError(f"stream {self.shown}: {refusal}, or use the camera's lower-resolution substream")
