"""What every pass reads the run's items through, whatever they are: image files (datasets/image_folder.py
DatasetBatches) or the frames of video files (datasets/sources/frame_batches.py FrameBatches).

An item is an image's path or a frame's FrameRef, named before anything is decoded; the batches cut them as the
passes do (full batches, then the rest) and hand each out decoded, an undecodable one as a LoadedImage with its
error. Random access (`load`, `at`, `decode`) costs an image its own decoding and a frame the decoding of its video
up to it: a video is decoded in order, so a call for several batches or items reads it once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional, Protocol, Sequence, Union

from datasets.image_folder import LoadedImage
from datasets.sources.identity import FrameRef

Item = Union[Path, FrameRef]


class ItemBatches(Protocol):
    kind: str  # datasets.kinds IMAGES or VIDEOS
    batch_size: int

    @property
    def items(self) -> Sequence[Item]: ...

    def __len__(self) -> int:
        """The batches."""

    def __iter__(self) -> Iterator[list[LoadedImage]]:
        """Every batch in order, each decoded as it is reached: one whole pass (a video read from its start)."""

    def load(self, index: int) -> list[LoadedImage]:
        """Batch `index`."""

    def at(self, indices: Sequence[int]) -> Iterator[list[LoadedImage]]:
        """The batches `indices`, in that order (a video read once for all of them when they come in order)."""

    def decode(self, positions: Sequence[int]) -> list[LoadedImage]:
        """The items at these positions in `items`, in this order (repeats allowed)."""

    def of(self, items: Sequence[Item], batch_size: Optional[int] = None) -> ItemBatches:
        """The same source over other items of it (a subset: the scored ones, the calibration ones)."""


def batch_bounds(items: int, batch_size: int, index: int) -> range:
    """The positions of batch `index` among `items` items."""
    start = index * batch_size
    return range(start, min(start + batch_size, items))
