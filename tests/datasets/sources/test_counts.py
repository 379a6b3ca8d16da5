"""What a source counts as it reads (datasets/sources/counts.py): increments and gaps from the reading thread, the
first reason it ended kept, and a snapshot that later counting leaves as it was."""
import threading

from datasets.sources.counts import CountsBook, Gap, SourceCounts


def test_counts_add_up_gaps_follow_each_other_and_the_first_end_stays():
    book = CountsBook()
    before = book.snapshot()
    book.add(arrived=3, decoded=2)
    book.add(arrived=1, corrupt_packets=1)
    first, second = Gap(1.0, 2.5, "no answer for data within 5 s", True, 2), Gap(4.0, 9.0, "refused", False, 3)
    book.gap(first)
    book.gap(second)
    book.end("the server reset the connection")
    book.end("stopped")
    counts = book.snapshot()
    assert (counts.arrived, counts.decoded, counts.corrupt_packets, counts.delivered) == (4, 2, 1, 0)
    assert counts.gaps == (first, second) and counts.ended == "the server reset the connection"
    assert before == SourceCounts() and before.ended is None  # a snapshot is not changed by later counting


def test_readers_on_other_threads_see_whole_snapshots():
    book = CountsBook()
    seen = []

    def read():
        for _ in range(200):
            counts = book.snapshot()
            seen.append((counts.arrived, counts.decoded))

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(2000):
        book.add(arrived=1, decoded=1)
    reader.join()
    assert all(arrived == decoded for arrived, decoded in seen)  # both increments of one add, never half
    assert book.snapshot().arrived == 2000
