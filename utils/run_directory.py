"""RunDirectory: the one place that knows the layout of outputs/<run_id>/ and writes files into it."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterable, Sequence


class RunDirectoryExists(Exception):
    pass


class RunDirectory:
    def __init__(self, output_dir: str | Path, run_id: str):
        self.path = Path(output_dir) / run_id
        self.run_id = run_id

    def create(self) -> None:
        """Claim the directory; an existing run is never overwritten."""
        if self.path.exists():
            raise RunDirectoryExists(
                f"run directory {self.path} already exists and is never overwritten; "
                f"choose another id with --set run.id=<new id> (or leave run.id unset for a timestamped one)"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.mkdir()

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        target = self.file(name)
        target.write_text(text)
        return target

    def write_json(self, name: str, data: Any) -> Path:
        return self.write_text(name, json.dumps(data, indent=2, default=str) + "\n")

    def write_csv(self, name: str, rows: Iterable[dict], columns: Sequence[str]) -> Path:
        """Header always written, so an empty table is still a readable CSV."""
        target = self.file(name)
        with target.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
            writer.writeheader()
            for row in rows:
                writer.writerow(row)
        return target
