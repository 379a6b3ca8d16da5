"""What `dataset.path` holds, as one source: a folder of images (as datasets/image_folder.py finds them), or a
video file or a folder of them (their selected frames, file after file in path order). Either way the items
come named before anything is decoded (`items`: an image's path, a frame's FrameRef) for the labels and the
counts, and a reading yields them in that order: an undecodable image or frame as an item with its error,
never silently left out. A reading of some items alone (`reading_of`) decodes each video from its start up to the
last of its frames wanted, handing on those only."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Optional, Sequence

from datasets.dataset_root import DatasetError, check_dataset_path
from datasets.image_folder import IMAGE_SUFFIXES, LoadedImage, decode_image, find_images
from datasets.item_batches import Item
from datasets.kinds import IMAGES, VIDEOS
from datasets.sources.counts import SourceCounts
from datasets.sources.identity import FrameRef
from datasets.sources.locations import is_video_file, shown_location
from datasets.sources.settings import DecodeSettings
from datasets.sources.source import Read, Reading
from datasets.sources.video_file import VideoFile
from datasets.sources.video_probe import probe_video



@dataclass(frozen=True)
class DatasetSource:
    kind: str  # IMAGES or VIDEOS
    root: Path  # what outputs name items relative to: dataset.path, or a single video's folder
    items: tuple[Item, ...]  # one per item a reading yields, in its order
    videos: tuple[VideoFile, ...] = ()
    max_pixels: Optional[int] = None

    @property
    def name(self) -> str:
        return str(self.root)

    def sizes(self) -> list[tuple[int, int]]:
        """(height, width) of every video frame, known from the probe (images: datasets/size_probe.py)."""
        return [(item.height, item.width) for item in self.items if isinstance(item, FrameRef)]

    def open(self) -> Reading:
        if self.kind == IMAGES:
            return ImageReading(self.name, [item for item in self.items if isinstance(item, Path)], self.max_pixels)
        return ChainedReading(self.name, [video.open() for video in self.videos])

    def reading_of(self, items: Sequence[Item]) -> Reading:
        """A reading of these items of the source alone, in the source's order whatever theirs."""
        if self.kind == IMAGES:
            wanted = set(items)
            return ImageReading(self.name, [item for item in self.items if item in wanted], self.max_pixels)
        frames: dict[Path, set[int]] = {}
        for item in items:
            if isinstance(item, FrameRef):
                frames.setdefault(item.video, set()).add(item.index)
        return ChainedReading(self.name, [replace(video, only=frozenset(frames[video.info.path])).open()
                                          for video in self.videos if video.info.path in frames])


def find_dataset(path: str | Path, limit: Optional[int], decode: DecodeSettings) -> DatasetSource:
    """The images or the videos at `path` (at most `limit` items: images, or frames as selected), each video
    probed (DatasetError for one FFmpeg cannot use)."""
    path = check_dataset_path(path)
    if path.is_file():
        return _videos(path.parent, [path], limit, decode)
    root = path
    found = sorted((p for p in root.rglob("*") if p.is_file()), key=lambda p: p.relative_to(root).as_posix())
    videos = [p for p in found if is_video_file(p)]
    images = [p for p in found if p.suffix.lower() in IMAGE_SUFFIXES]
    if videos and images:
        raise DatasetError(f"dataset.path {shown_location(root)} holds both images ({len(images):,}, e.g. "
                           f"{images[0].relative_to(root).as_posix()}) and videos ({len(videos):,}, e.g. "
                           f"{videos[0].relative_to(root).as_posix()}); point it at a folder of one kind")
    if videos:
        return _videos(root, videos, limit, decode)
    return DatasetSource(IMAGES, root, tuple(find_images(root, limit)), max_pixels=decode.max_pixels)


def _videos(root: Path, paths: Sequence[Path], limit: Optional[int], decode: DecodeSettings) -> DatasetSource:
    """Every probed video holds a frame that decodes and every selection keeps frame 0: never no items."""
    limit = limit or None  # as find_images reads it
    videos, items = [], []
    for path in paths:
        left = None if limit is None else limit - len(items)
        if left == 0:
            break
        video = VideoFile(probe_video(path, decode.max_pixels), decode, limit=left)
        refs = video.refs()
        videos.append(video)
        items += refs
    return DatasetSource(VIDEOS, root, tuple(items), tuple(videos), decode.max_pixels)


class ImageReading(Reading):
    """Image files as a reading: each read is a path, each decode datasets/image_folder.decode_image."""

    def __init__(self, name: str, paths: Sequence[Path], max_pixels: Optional[int]):
        super().__init__(name)
        self.paths, self.max_pixels = paths, max_pixels

    def _read(self) -> Iterator[Read]:
        for path in self.paths:
            if self.stopped:
                break
            self.book.add(arrived=1)
            yield Read(path)
        self.book.end("stopped" if self.stopped else "end of files")

    def decode(self, read: Read) -> list[LoadedImage]:
        item = decode_image(read.payload, self.max_pixels)
        self.book.add(decoded=int(item.image is not None), not_decoded=int(item.image is None),
                      delivered=int(item.image is not None))
        return [item]


class ChainedReading(Reading):
    """Readings one after another (the videos of a folder), as one."""

    def __init__(self, name: str, readings: Sequence[Reading]):
        super().__init__(name)
        self.readings = readings

    def _read(self) -> Iterator[Read]:
        for reading in self.readings:
            if self.stopped:
                break
            with reading:
                for read in reading.reads():
                    yield Read((reading, read), read.arrival_s)
                    if self.stopped:
                        reading.stop()

    def decode(self, read: Read) -> list[LoadedImage]:
        reading, inner = read.payload
        return reading.decode(inner)

    def counts(self) -> SourceCounts:
        """The readings' counts added up (gaps joined; `ended` from the last reading)."""
        parts = [reading.counts() for reading in self.readings]
        numbers = {name: sum(getattr(part, name) for part in parts)
                   for name in ("arrived", "decoded", "delivered", "not_decoded", "corrupt_packets",
                                "concealed_frames", "connections")}
        return SourceCounts(**numbers, gaps=tuple(gap for part in parts for gap in part.gaps),
                            ended="stopped" if self.stopped else (parts[-1].ended if parts else None))
