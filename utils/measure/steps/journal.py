"""What a run measures, on disk as it is measured: a run killed without warning (SIGKILL, the OOM killer, a power
cut) keeps every batch it completed.

steps_timer.csv grows by the rows of each batch as the batch ends: one write and a flush to the operating system
per batch, so a killed process leaves whole rows (a power cut may still cut the last one; readers drop a last
line without its newline). The tables a measurement grows (the memory timeline; utils/measure/contract.py,
GrowingTable) get their new rows appended after each pass; the layer tables are rewritten whole, atomically; a camera run's frames are appended as they end
(RowJournal). At the end the writers write every file from the run record as before, replacing the journal's.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Sequence

from utils.record.steps import STEP_TIMER_COLUMNS, StepRecord, step_rows
from utils.storage.streamed_csv import StreamedCsv


class StepJournal:
    """steps_timer.csv as the timer fills `records`: call `batch_ended` after each batch's steps are closed."""

    def __init__(self, target: Path, records: list[StepRecord], origin_ns: int):
        self.records = records
        self.origin_ns = origin_ns
        self.written = 0
        self._lock = threading.Lock()  # LoadGen's streams end batches from their own threads
        self.file = StreamedCsv(target, STEP_TIMER_COLUMNS)

    def batch_ended(self) -> None:
        """The timer's `after_batch`: once it returns, the batch is on disk (bar a power cut)."""
        self._append_new_rows()

    def pass_ended(self) -> None:
        self._append_new_rows()
        self.file.sync()

    def close(self) -> None:
        """The rows not written yet, then the file closed (the writers then replace it from the run record)."""
        self._append_new_rows()
        self.file.close()

    def _append_new_rows(self) -> None:
        with self._lock:
            end = len(self.records)
            rows = step_rows(self.records[self.written:end], self.origin_ns)
            self.written = end
            self.file.append(rows)

    def discard(self) -> None:
        self.file.discard()


class TableJournal:
    """A CSV whose rows only ever grow at the end (the memory timeline): `rows_since(n)` gives the rows after the
    first n; each call to `pass_ended` appends them and syncs."""

    def __init__(self, target: Path, columns: Sequence[str], rows_since: Callable[[int], list[dict]]):
        self.rows_since = rows_since
        self.written = 0
        self.file = StreamedCsv(target, columns)

    def pass_ended(self) -> None:
        rows = self.rows_since(self.written)
        self.written += len(rows)
        self.file.append(rows)
        self.file.sync()

    def close(self) -> None:
        self.file.close()

    def discard(self) -> None:
        self.file.discard()


class RunJournal:
    """The journals of one run: steps_timer.csv per batch and each measurement's growing tables (memory.csv and
    memory_steps.csv) per pass. `tables`: (path, columns, rows_since) of each table journal."""

    def __init__(self, steps_target: Path, records: list[StepRecord], origin_ns: int,
                 tables: Sequence[tuple[Path, Sequence[str], Callable[[int], list[dict]]]] = ()):
        self.steps = StepJournal(steps_target, records, origin_ns)
        self.tables: list[TableJournal] = []
        try:
            for target, columns, rows_since in tables:
                self.tables.append(TableJournal(target, columns, rows_since))
        except BaseException:
            self.discard()
            raise

    def batch_ended(self) -> None:
        self.steps.batch_ended()

    def pass_ended(self) -> None:
        self.steps.pass_ended()
        for table in self.tables:
            table.pass_ended()

    def close(self) -> None:
        """Every row measured, then the files closed: the writers then replace them from the run record."""
        self.steps.close()
        for table in self.tables:
            table.close()

    def discard(self) -> None:
        for journal in (self.steps, *self.tables):
            journal.discard()


class RowJournal:
    """A CSV whose rows any thread appends as they are measured (a camera run's frames): each call one write and
    a flush to the operating system, under a lock, so a killed run keeps every row appended before it."""

    def __init__(self, target: Path, columns: Sequence[str]):
        self._lock = threading.Lock()
        self.file = StreamedCsv(target, columns)

    def append(self, rows: Sequence[dict]) -> None:
        if rows:
            with self._lock:
                self.file.append(rows)

    def close(self) -> None:
        with self._lock:
            self.file.close()

    def discard(self) -> None:
        with self._lock:
            self.file.discard()
