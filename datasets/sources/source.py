"""The one shape of every source: a description (`Source`) that opens into a reading (`Reading`), which yields
`Read`s (data as it arrives, not yet decoded) and decodes each into LoadedImage items.

Reading and decoding are two calls so the harness can time them apart from outside: `next(reading.reads())`
waits for data (the disk, the network, a camera's pace) and `reading.decode(read)` is the CPU work of turning
it into BGR frames (the decode step, beside an image's load). `iter(reading)` chains the two for a consumer
that times them together. A reading belongs to one thread (a decoder's state is ordered); `stop()` and
`counts()` may be called from any other. A reading closes its files and connections when its reads end, on
`close()`, or on leaving its `with` block.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Protocol

from datasets.image_folder import LoadedImage
from datasets.sources.counts import CountsBook, SourceCounts


@dataclass(frozen=True)
class Read:
    """One piece of data read from a source, opaque to the consumer: a packet, a decoder to flush, a file."""

    payload: Any
    arrival_s: Optional[float] = None  # time.monotonic() when it arrived, for sources that arrive


@dataclass(frozen=True)
class Flush:
    """The end of a decoder's packets, as a read's payload: what the decoder still holds comes out."""

    stream: Any  # the av VideoStream whose decoder is flushed


class Reading:
    """What every kind of reading shares: its counts, the stop flag, chaining reads to decodes, closing."""

    def __init__(self, name: str):
        self.name = name  # the file or URL read, as shown in messages
        self.book = CountsBook()
        self._stop = threading.Event()
        self._reads: Optional[Iterator[Read]] = None

    def reads(self) -> Iterator[Read]:
        """The reads, in order; one iterator per reading (a second call continues the first)."""
        if self._reads is None:
            self._reads = self._read()
        return self._reads

    def _read(self) -> Iterator[Read]:
        raise NotImplementedError

    def decode(self, read: Read) -> list[LoadedImage]:
        raise NotImplementedError

    def __iter__(self) -> Iterator[LoadedImage]:
        for read in self.reads():
            yield from self.decode(read)

    def counts(self) -> SourceCounts:
        return self.book.snapshot()

    def stop(self) -> None:
        """Ends the reading at its next read (bounded by the read timeout); safe from any thread."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        """Closes what the reads hold open; from the reading's own thread."""
        if self._reads is not None:
            self._reads.close()

    def __enter__(self) -> "Reading":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Source(Protocol):
    """A description of a source; `open()` starts one reading of it (a file can be read again, per pass)."""

    name: str

    def open(self) -> Reading: ...


def batches(frames: Iterator[LoadedImage], batch_size: int) -> Iterator[list[LoadedImage]]:
    """The items cut into batches of `batch_size` (the last one shorter): what a pass's load step fetches."""
    batch: list[LoadedImage] = []
    for item in frames:
        batch.append(item)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch:
        yield batch
