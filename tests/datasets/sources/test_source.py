"""The one shape of every source (datasets/sources/source.py): a reading chains its reads to their decodes, keeps one
iterator of reads, stops on a flag any thread may set, closes what its reads hold, and its items are cut into
batches as the loader cuts images."""
import threading

from datasets.image_folder import LoadedImage
from datasets.sources.counts import SourceCounts
from datasets.sources.source import Read, Reading, batches


class Counting(Reading):
    """Reads the numbers it was given, decodes each into that many items; notes when its reads are closed."""

    def __init__(self, sizes):
        super().__init__("counting")
        self.sizes, self.closed = sizes, False

    def _read(self):
        try:
            for size in self.sizes:
                if self.stopped:
                    return
                yield Read(size, arrival_s=float(size))
        finally:
            self.closed = True

    def decode(self, read):
        return [LoadedImage(f"{read.payload}-{index}", None) for index in range(read.payload)]


def test_a_reading_chains_its_reads_to_their_decodes_through_one_iterator():
    reading = Counting([2, 0, 1])
    first = next(reading.reads())
    assert first == Read(2, 2.0) and reading.reads() is reading.reads()
    # iterating the reading continues the same reads: the first, taken above, is not read again
    assert [item.path for item in reading] == ["1-0"]
    assert [item.path for item in Counting([2, 0, 1])] == ["2-0", "2-1", "1-0"]
    assert reading.closed and reading.counts() == SourceCounts()


def test_a_stop_from_another_thread_ends_the_reads_and_leaving_the_block_closes_them():
    with Counting([1, 1, 1]) as reading:
        reads = reading.reads()
        next(reads)
        stopper = threading.Thread(target=reading.stop)
        stopper.start()
        stopper.join()
        assert reading.stopped and list(reads) == []
    assert reading.closed
    with Counting([1, 1]) as unfinished:
        next(unfinished.reads())
    assert unfinished.closed  # its generator was closed, not left open


def test_batches_are_cut_with_a_short_last_one():
    assert [len(batch) for batch in batches(iter(range(7)), 3)] == [3, 3, 1]
    assert list(batches(iter([]), 3)) == [] and [b for b in batches(iter("ab"), 2)] == [["a", "b"]]
