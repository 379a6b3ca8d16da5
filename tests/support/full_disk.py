"""A disk that fills up, standing in for `os` and `open` in the writers (utils/storage/atomic.py, streamed_csv.py)."""
import errno
import os

import utils.storage.atomic
import utils.storage.streamed_csv


class FullDisk:
    """Stands in for `os` and `open` in the writers. The disk fills up while a file whose path contains
    `fills_at` is written: that write stops part-way with ENOSPC, as do all writes after it."""

    def __init__(self, fills_at):
        self.fills_at = fills_at
        self.full = False
        self.failed: list[str] = []

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, file, mode="r", *args, **kwargs):
        handle = open(file, mode, *args, **kwargs)
        if "w" in mode:
            real_write = handle.write

            def write(data):
                self.full = self.full or (self.fills_at is not None and self.fills_at in str(file))
                if self.full:
                    real_write(data[:len(data) // 2])
                    self.failed.append(str(file))
                    raise OSError(errno.ENOSPC, "No space left on device")
                return real_write(data)

            handle.write = write
        return handle


def filling(monkeypatch):
    """`fill(fills_at)`: the writers on a FullDisk from then on (undone with the test's monkeypatch); returns it."""
    def fill(fills_at):
        disk = FullDisk(fills_at)
        for module in (utils.storage.atomic, utils.storage.streamed_csv):
            monkeypatch.setattr(module, "os", disk)
            monkeypatch.setattr(module, "open", disk.open, raising=False)
        return disk
    return fill
