"""A run directory read back from its files (summary.json, env.json, config.yaml and the timing CSVs), for the
tools that look at finished runs side by side: sweeps, compare and tune.

A run killed without warning (SIGKILL, the OOM killer, a power cut) leaves summary.json saying `running` and
the files its journal kept (steps_timer.csv up to its last batch, detections.csv, the memory timeline): such a
directory reads as `killed`, says up to where it holds, and its timings are used as they are.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Optional

import pandas as pd
import yaml

from utils.core.errors import UsageError
from utils.config.renamed_keys import with_new_names
from utils.record.run_record import Status
from utils.record.steps import PIPELINE_STEP, PassKind
from utils.storage import layout


class RunFilesError(UsageError):
    """A path that is not a readable run directory (a user's mistake: exit status 2)."""


class FinishedRun:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not self.path.is_dir():
            raise RunFilesError(f"{self.path} is not a folder; pass a run directory such as outputs/<run_id> "
                                "(or a sweep's point, outputs/<sweep_id>/<point>)")
        if not (self.path / layout.SUMMARY).is_file():
            hint = (f"it holds a sweep: pass one of its points, e.g. {self.path}/<point>"
                    if (self.path / layout.SWEEP_JSON).is_file() else "pass a folder that a run wrote")
            raise RunFilesError(f"{self.path} is not a run directory (no {layout.SUMMARY}); {hint}")
        self.summary = self._json(layout.SUMMARY)

    @property
    def name(self) -> str:
        return self.path.name

    def _json(self, name: str) -> dict:
        try:
            return json.loads((self.path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise RunFilesError(f"{self.path / name} cannot be read as JSON ({error}); the run directory is "
                                "incomplete or damaged") from None

    def environment(self) -> dict:
        return self._json(layout.ENV) if (self.path / layout.ENV).is_file() else {}

    def config(self) -> dict:
        """config.yaml as data, keys renamed since the run was written under their new names."""
        try:
            return with_new_names(yaml.safe_load((self.path / layout.CONFIG).read_text(encoding="utf-8")) or {})
        except (OSError, yaml.YAMLError):
            return {}

    @property
    def killed(self) -> bool:
        """summary.json still says running: the run ended without writing its record (or is still going)."""
        return self.summary.get("status") == Status.RUNNING

    def holds_until(self) -> str:
        """Up to where a run's steps_timer.csv holds: its last whole batch, in words."""
        steps = self.table(layout.STEPS_TIMER)
        batches = steps[steps["step"] == PIPELINE_STEP] if steps is not None else None
        if batches is None or batches.empty:
            return "before its first batch (no batch was timed)"
        last = batches.iloc[-1]
        kind = PassKind(last["pass_kind"])
        number = f" {int(last['pass_index']) + 1}" if kind is PassKind.TIMED else ""
        timed = int((batches["pass_kind"] == PassKind.TIMED.value).sum())
        return f"{kind.value} pass{number}, batch {int(last['batch'])} ({timed} timed batch(es) in all)"

    def killed_note(self) -> str:
        """What a reader of a killed run must know, in one line."""
        return (f"{self.path} was killed before it wrote its record (summary.json still says running): its files "
                f"hold what it measured up to the {self.holds_until()}")

    def table(self, name: str) -> Optional[pd.DataFrame]:
        """A CSV of the run, None when the run did not write it (e.g. no layer timing). A last line cut short
        (a killed run's journal, a power cut) is left out."""
        try:
            data = (self.path / name).read_bytes()
            if data and not data.endswith(b"\n"):
                data = data[:data.rfind(b"\n") + 1]
            return pd.read_csv(io.BytesIO(data))
        except (OSError, pd.errors.EmptyDataError, pd.errors.ParserError):
            return None

    def camera_window(self) -> Optional[pd.DataFrame]:
        """A camera run's measured frames: the rows of cameras_frames.csv that arrived inside its window (times on
        the run's clock, latency_ms empty for a frame not detected). None for a run that measured no window."""
        if (self.summary.get("cameras") or {}).get("status") != "measured":
            return None
        frames = self.table(layout.CAMERA_FRAMES)
        if frames is None:
            return None
        frames = frames[frames["measured"].astype(str).str.lower() == "true"].copy()
        frames["latency_ms"] = pd.to_numeric(frames["latency_ms"], errors="coerce")
        return frames

    def timed_steps(self) -> pd.DataFrame:
        """steps_timer.csv rows of the clean timed passes that held images, with their ms per image."""
        steps = self.table(layout.STEPS_TIMER)
        if steps is None:
            raise RunFilesError(f"{self.path / layout.STEPS_TIMER} is missing or unreadable; the run stopped "
                                "before it timed anything")
        timed = steps[(steps["pass_kind"] == PassKind.TIMED.value) & (steps["images"] > 0)]
        if "cold_shape" in timed and not timed["cold_shape"].all():  # as the statistics: warm batches only
            timed = timed[~timed["cold_shape"].astype(bool)]
        timed = timed.copy()
        timed["ms_per_image"] = timed["ms"] / timed["images"]
        return timed

    def per_image_samples(self, step: str = PIPELINE_STEP) -> list[float]:
        """One value per timed batch: the step's milliseconds per image."""
        timed = self.timed_steps()
        return timed.loc[timed["step"] == step, "ms_per_image"].tolist()

    def get(self, dotted: str, default: Any = None) -> Any:
        """A value of summary.json by its dotted path."""
        node: Any = self.summary
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node
