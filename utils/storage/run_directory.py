"""RunDirectory: claims outputs/<run_id>/ and writes files into it, each one atomically."""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from utils.core.errors import UsageError
from utils.storage.atomic import OutputWriteError, atomic_file, atomic_write_bytes, atomic_write_text


class RunDirectoryError(UsageError):
    """The run directory cannot be claimed because of the user's settings (exit status 2)."""


class RunDirectoryExists(RunDirectoryError):
    pass


class RunDirectory:
    def __init__(self, output_dir: str | Path, run_id: str):
        self.output_dir = Path(output_dir)
        self.path = self.output_dir / run_id
        self.run_id = run_id

    def create(self) -> None:
        """Claim the directory; an existing run (or anything else under that name) is never overwritten."""
        existing = _nearest_existing(self.output_dir)
        if not existing.is_dir():
            what = "a dangling symbolic link" if existing.is_symlink() and not existing.exists() else "a file"
            where = "" if existing == self.output_dir else f" cannot be created: {existing}"
            raise RunDirectoryError(f"run.output_dir {self.output_dir}{where} is {what}, not a folder; point "
                                    f"run.output_dir at a folder (it is created when missing)")
        if os.path.lexists(self.path):
            what = "a dangling symbolic link" if self.path.is_symlink() and not self.path.exists() else "already exists"
            raise RunDirectoryExists(
                f"run directory {self.path} {what} and is never overwritten; choose another id with "
                f"--set run.id=<new id> (or leave run.id unset for a timestamped one)")
        try:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            self.path.mkdir()
        except OSError as error:
            raise OutputWriteError(self.path, error) from error

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        return atomic_write_text(self.file(name), text)

    def write_bytes(self, name: str, data: bytes) -> Path:
        return atomic_write_bytes(self.file(name), data)

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, default=str) + "\n")

    def write_csv(self, name: str, rows: Iterable[dict], columns: Sequence[str]) -> Path:
        """Header always written, so an empty table is still a readable CSV."""
        target = self.file(name)
        with atomic_file(target, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
        return target


def _nearest_existing(folder: Path) -> Path:
    """`folder` or its nearest ancestor that exists (a dangling symbolic link counts): the one that decides
    whether the folder can be created."""
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate):
            return candidate
    return folder
