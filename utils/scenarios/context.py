"""What every scenario's passes run through: the pass runner with its recorders, the run record, the detections
writer, the progress bar over the passes and the console."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, TextIO

from utils.core.progress import terminal_bar
from utils.detections.writer import DetectionWriter
from utils.record.run_record import RunRecord
from utils.record.steps import PassKind
from utils.scenarios.pass_plan import PlannedPass
from utils.scenarios.runner import PassRunner

PASS_NAMES = {PassKind.WARMUP: "warm-up", PassKind.TIMED: "timed pass", PassKind.LAYERS: "layer timing",
              PassKind.PROFILER: "profiler", PassKind.ACCURACY: "accuracy pass"}


class PassProgress:
    """The progress bar over the passes, in files: on a terminal only (plain output when piped)."""

    def __init__(self, total: Optional[int], run_id: str, file: Optional[TextIO] = None):
        self.run_id = run_id
        self.bar = terminal_bar(total, run_id, file)

    def start(self, kind: PassKind, index: int = 0) -> None:
        number = f" {index + 1}" if kind is PassKind.TIMED else ""
        self.bar.set_description(f"{self.run_id}: {PASS_NAMES[kind]}{number}", refresh=False)

    def advance(self, images: int) -> None:
        self.bar.update(images)

    def add(self, images: int) -> None:
        """Images still to come: the total becomes what the bar has counted so far plus these."""
        self.bar.total = self.bar.n + images
        self.bar.refresh()

    def grow(self, total: Optional[int]) -> None:
        if total is None:
            self.bar.reset(total=None)
        else:
            self.bar.total = total
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


@dataclass
class PassContext:
    """What every pass runs through and writes into: the runner (with the recorders listening), the run record,
    the detections writer, the progress bar and the console; `after_pass` follows each pass (the journal)."""

    runner: PassRunner
    record: RunRecord
    detections: DetectionWriter
    progress: PassProgress
    console: Callable[[str], None]
    after_pass: Callable[[PlannedPass], None] = lambda planned: None
