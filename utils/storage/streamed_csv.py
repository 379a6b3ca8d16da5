"""A CSV under its real name that grows by whole batches of rows: each batch in one write, flushed to the
operating system, so a process killed without warning leaves whole rows only. A write that fails removes the
file: a reader never finds one cut mid-row."""
from __future__ import annotations

import csv
import io
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from utils.storage.atomic import OutputWriteError


class StreamedCsv:
    def __init__(self, target: Path, columns: Sequence[str]):
        self.target = target
        self.columns = tuple(columns)
        try:
            self.handle = open(target, "w", newline="", encoding="utf-8")
        except OSError as error:
            raise OutputWriteError(target, error) from error
        self.pending = io.StringIO()  # the rows of the batch being written
        self.writer = csv.writer(self.pending)
        try:
            self.write(self.columns)
            self.flush()
        except BaseException:
            self.discard()
            raise

    def write(self, row: Sequence) -> None:
        self.writer.writerow(row)

    def append(self, rows: Sequence[Mapping]) -> None:
        """Rows given by column name (a missing one empty), written and flushed as one batch."""
        for row in rows:
            self.write([row.get(column, "") for column in self.columns])
        self.flush()

    def flush(self) -> None:
        """The pending rows in one write, flushed to the operating system."""
        text = self.pending.getvalue()
        if not text or self.handle.closed:
            return
        self.pending.seek(0)
        self.pending.truncate()
        with self._removed_if_it_fails():
            self.handle.write(text)
            self.handle.flush()

    def sync(self) -> None:
        """Down to the disk itself (a flush reaches the operating system only)."""
        if self.handle.closed:
            return
        with self._removed_if_it_fails():
            os.fsync(self.handle.fileno())

    def close(self) -> None:
        """The pending rows, then the file closed."""
        if self.handle.closed:
            return
        self.flush()
        with self._removed_if_it_fails():
            self.handle.close()

    def publish(self) -> None:
        """The last rows, synced to the disk and closed; a write that fails here leaves no file of that name."""
        if self.handle.closed:
            return
        self.flush()
        self.sync()
        self.close()

    @contextmanager
    def _removed_if_it_fails(self) -> Iterator[None]:
        """A write, sync or close that fails removes the file (a row it cut is never left for a reader)."""
        try:
            yield
        except OSError as error:
            self.discard()
            raise OutputWriteError(self.target, error) from error

    def discard(self) -> None:
        if not self.handle.closed:
            try:
                self.handle.close()
            except OSError:
                pass
        try:
            os.unlink(self.target)
        except OSError:
            pass
