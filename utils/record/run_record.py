"""The run record: who the run is (its identity) and everything it measured, as plain data.

Writers turn a record into the files of outputs/<run_id>/; nothing here knows about files. summary.json
carries `schema_version`, raised whenever a key changes meaning or disappears.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Optional

from utils.record.layers import SOURCE_TORCH_HOOKS, LayerProfile, TimingSnapshot
from utils.record.sections import (AccuracySection, AgreementSection, CamerasSection, RecipeEntry, ScenarioSection,
                                   SourceSection)
from utils.record.steps import StepRecord

SCHEMA_VERSION = 2


def detbench_version() -> str:
    try:
        return metadata.version("detbench")
    except metadata.PackageNotFoundError:
        return "unknown (not installed; run the README's setup command)"


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Status:
    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


@dataclass(frozen=True)
class RunIdentity:
    run_id: str
    config_file: str
    family: str
    arch: str
    weights: str
    random_weights: bool
    seed: int
    img_size: int
    batch_size: int
    runtime: dict[str, Any]  # what the runtime really uses, read back after preparing the model
    step_order: tuple[str, ...]
    started_utc: str = field(default_factory=utc_now)
    detbench_version: str = field(default_factory=detbench_version)
    schema_version: int = SCHEMA_VERSION

    @property
    def random_weights_note(self) -> Optional[str]:
        """The banner every image and plot of a random-weights run carries."""
        if not self.random_weights:
            return None
        return f"RANDOM WEIGHTS (seed {self.seed}): boxes are not real detections"


@dataclass
class Table:
    rows: list[dict]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class MeasurementResult:
    """What one measurement of utils/measure/registry.py measured: its summary.json section (its figures, or by
    `status` and `reason` why there are none) and its tables, each written as the run directory's file of that
    name."""
    section: dict[str, Any]
    tables: dict[str, Table] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileResult:
    trace_json: str  # Chrome trace format: torch.profiler's export, made loadable by every viewer (runtime_trace)
    ops: Table  # operator table by self time
    wall_ms: float
    layers: Optional[LayerProfile] = None  # memory and operators per call path; None without torch hooks


@dataclass
class ImageCounts:
    found: int = 0
    processed: int = 0
    skipped: int = 0
    detections: int = 0


@dataclass
class RunRecord:
    identity: RunIdentity
    status: str = Status.RUNNING
    ended_utc: Optional[str] = None
    stop_reason: Optional[str] = None  # the signal or the failure that ended the run early
    images: ImageCounts = field(default_factory=ImageCounts)
    steps: list[StepRecord] = field(default_factory=list)
    steps_origin_ns: int = 0
    timed_passes: int = 0
    wall_s: Optional[float] = None
    layer_timing: Optional[TimingSnapshot] = None
    layer_timing_source: str = SOURCE_TORCH_HOOKS  # or the runtime's own profiler
    profile: Optional[ProfileResult] = None
    # By measurement key (summary.json's), in registry order; a measurement not collected yet is absent.
    measured: dict[str, MeasurementResult] = field(default_factory=dict)
    scenario: Optional[ScenarioSection] = None  # a LoadGen scenario's settings and verdict, or the cameras'
    cameras: Optional[CamerasSection] = None  # benchmark.scenario cameras: per camera and over all of them
    camera_streams: Optional[Table] = None  # cameras.csv
    camera_frames: Optional[Table] = None  # cameras_frames.csv
    warmup: Optional[dict[str, Any]] = None  # the warm-up's batches, the input shapes and those left cold
    agreement: Optional[AgreementSection] = None  # against the torch fp32 reference, for any other runtime
    accuracy: Optional[AccuracySection] = None  # the accuracy pass: mAP and, beside a reference, the drop
    calibration: Optional[dict[str, Any]] = None  # which images calibrated int8
    source: Optional[SourceSection] = None  # dataset.path's videos: what they are and what a reading of them met
    recipe: Optional[RecipeEntry] = None  # the recipe a file ran with, and on what ground
    accuracy_classes: Optional[Table] = None  # per class, accuracy.csv
    below: Optional[Any] = None  # utils.measure.below_layer.record.BelowLayer: samples, counters, kernels, ITT
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what a reader needs to read the results right

    def warn(self, *messages: str) -> None:
        """The one way a warning joins the run: each once, in the order first given (summary.json `warnings`,
        report.html and the console's closing lines read them from here)."""
        for message in messages:
            if message and message not in self.warnings:
                self.warnings.append(message)

    def finish(self, status: str, stop_reason: Optional[str] = None) -> None:
        self.status = status
        self.stop_reason = stop_reason
        self.ended_utc = utc_now()
