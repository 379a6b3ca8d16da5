"""The frames of dataset.path's videos in batches, as the passes read them (datasets/item_batches.py): a whole pass
decodes the videos again from their start, as a camera's decoder works every time; a batch or a few items read back
decode their video from its start up to them, once for the whole call, converting only the frames wanted. Nothing
is kept between calls: a video's frames decoded take 3 bytes a pixel, more than a run can hold for a long clip.

Every reading that covers all the batches' items leaves its counts (`whole_readings`): what one pass over the
videos met (frames decoded, corrupt packets skipped, frames not decoded), the same for every pass of a file."""
from __future__ import annotations

from contextlib import closing
from typing import ClassVar, Iterator, Optional, Sequence

from datasets.image_folder import DatasetBatches, LoadedImage
from datasets.item_batches import Item, ItemBatches, batch_bounds
from datasets.kinds import IMAGES, VIDEOS
from datasets.sources.counts import SourceCounts
from datasets.sources.dataset import DatasetSource
from datasets.sources.identity import FrameRef
from datasets.sources.source import batches


class FrameBatches:
    kind: ClassVar[str] = VIDEOS

    def __init__(self, source: DatasetSource, items: Sequence[FrameRef], batch_size: int):
        self.source, self._items, self.batch_size = source, tuple(items), batch_size
        self.whole_readings: list[SourceCounts] = []

    @property
    def items(self) -> Sequence[FrameRef]:
        return self._items

    def __len__(self) -> int:
        return -(-len(self._items) // self.batch_size)

    def __iter__(self) -> Iterator[list[LoadedImage]]:
        reading = self.source.reading_of(self._items)
        try:
            with reading:
                yield from batches(iter(reading), self.batch_size)
        finally:  # also when the pass stops after its last batch, before the reading's own end
            self._counted(reading.counts(), len(self._items))

    def load(self, index: int) -> list[LoadedImage]:
        return self.decode(batch_bounds(len(self._items), self.batch_size, index))

    def at(self, indices: Sequence[int]) -> Iterator[list[LoadedImage]]:
        wanted = [batch_bounds(len(self._items), self.batch_size, index) for index in indices]
        got: dict[int, LoadedImage] = {}
        with closing(self._frames([position for bounds in wanted for position in bounds])) as frames:
            for bounds in wanted:
                while any(position not in got for position in bounds):
                    position, frame = next(frames)
                    got[position] = frame
                yield [got.pop(position) for position in bounds]

    def decode(self, positions: Sequence[int]) -> list[LoadedImage]:
        got = dict(self._frames(positions))
        return [got[position] for position in positions]

    def of(self, items: Sequence[Item], batch_size: Optional[int] = None) -> "FrameBatches":
        return FrameBatches(self.source, [item for item in items if isinstance(item, FrameRef)],
                            batch_size or self.batch_size)

    def _frames(self, positions: Sequence[int]) -> Iterator[tuple[int, LoadedImage]]:
        """(position, frame) for each of these positions once, as the reading gives them out: in video order."""
        wanted = sorted(set(positions))
        place = {(str(self._items[position].video), self._items[position].index): position for position in wanted}
        reading = self.source.reading_of([self._items[position] for position in wanted])
        try:
            with reading:
                for frame in reading:
                    yield place[(frame.path, frame.frame)], frame
        finally:
            self._counted(reading.counts(), len(wanted))

    def _counted(self, counts: SourceCounts, wanted: int) -> None:
        if wanted == len(self._items) and counts.delivered + counts.not_decoded == wanted:
            self.whole_readings.append(counts)


def item_batches(source: DatasetSource, batch_size: int) -> ItemBatches:
    """The source's items in batches of `batch_size`: image files as the image loader cuts them, or frames."""
    if source.kind == IMAGES:
        return DatasetBatches(list(source.items), batch_size, source.max_pixels)
    return FrameBatches(source, source.items, batch_size)
