"""TensorBoard event files of a run, from the record and the tables RunWriter builds: step latencies per timed
batch, a camera run's latency from arrival per camera and frame, each measurement's scalars where it measured
(memory over time, energy per step), a few annotated images,
the summary as text, and the config with the headline figures as hparams, so `tensorboard --logdir outputs`
compares runs side by side.

The events are written into a hidden folder that is renamed into place when complete, so TensorBoard never
reads half a run. The profiled batch's trace is copied under the `*.pt.trace.json` name the TensorBoard
profiler plugin (torch-tb-profiler) looks for: it takes every folder under --logdir holding such a file as one
run, named by its path, the same name TensorBoard gives the event files beside it.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

import cv2

from utils.measure.registry import measurements
from utils.record.run_record import RunRecord
from utils.record.steps import PassKind
from utils.storage import layout
from utils.storage.atomic import OutputWriteError
from utils.reporting.run_figures import Scalar

IMAGES_SHOWN = 4
IMAGE_SIDE = 480  # longest side of an image in TensorBoard: enough to see the boxes, small event files
HEADLINE_TAG = "headline/"


def step_series(step_rows: list[dict]) -> dict[str, list[float]]:
    """ms of every timed batch per step, in running order: the x axis is the batch's index over the timed
    passes."""
    series: dict[str, list[float]] = {}
    for row in step_rows:
        if str(row["pass_kind"]) == PassKind.TIMED.value:
            series.setdefault(row["step"], []).append(float(row["ms"]))
    return series


def camera_series(frame_rows: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """A camera run's measured frames detected, per camera: (seconds from the window's first arrival, latency from
    arrival in ms), in arrival order; from cameras_frames.csv's rows (utils/scenarios/cameras/frames.py)."""
    measured = [row for row in frame_rows if str(row.get("measured")).lower() == "true" and row.get("latency_ms") != ""]
    if not measured:
        return {}
    origin = min(float(row["arrival_s"]) for row in measured)
    series: dict[str, list[tuple[float, float]]] = {}
    for row in sorted(measured, key=lambda row: float(row["arrival_s"])):
        series.setdefault(row["stream"], []).append((float(row["arrival_s"]) - origin, float(row["latency_ms"])))
    return series


def hparam_values(flat_config: Mapping[str, Scalar]) -> dict[str, str | float]:
    """TensorBoard's hparams take numbers and text: unset keys show as "null" and booleans as true/false,
    rather than being dropped or stored as 1.0 and 0.0."""
    values: dict[str, str | float] = {}
    for key, value in flat_config.items():
        if value is None or isinstance(value, bool):
            values[key] = json.dumps(value)
        else:
            values[key] = value
    return values


def downscaled(image, side: int = IMAGE_SIDE):
    """The image with its longest side at most `side` pixels, aspect kept."""
    height, width = image.shape[:2]
    scale = side / max(height, width)
    if scale >= 1:
        return image
    return cv2.resize(image, (max(1, round(width * scale)), max(1, round(height * scale))),
                      interpolation=cv2.INTER_AREA)


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """summary.json as a Markdown code block (four-space indent), which TensorBoard's text tab shows as is."""
    text = json.dumps(summary, indent=2, default=str)
    return "\n".join("    " + line for line in text.splitlines())


def write_tensorboard(run_path: Path, record: RunRecord, summary: Mapping[str, Any], step_rows: list[dict],
                      flat_config: Mapping[str, Scalar], figures: Mapping[str, float]) -> Path:
    target = run_path / layout.TENSORBOARD_DIR
    staging = run_path / f".{layout.TENSORBOARD_DIR}.{os.getpid()}.tmp"
    try:
        shutil.rmtree(staging, ignore_errors=True)
        _write_events(staging, run_path, record, summary, step_rows, flat_config, figures)
        trace = run_path / layout.TRACE
        if record.profile is not None and trace.is_file():
            # The copy of trace.json as written, so whatever that file holds the plugin shows too.
            shutil.copyfile(trace, staging / Path(layout.TENSORBOARD_TRACE).name)
        os.replace(staging, target)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        raise OutputWriteError(target, error) from error
    return target


def _write_events(folder: Path, run_path: Path, record: RunRecord, summary: Mapping[str, Any],
                  step_rows: list[dict], flat_config: Mapping[str, Scalar], figures: Mapping[str, float]) -> None:
    from torch.utils.tensorboard import SummaryWriter
    from torch.utils.tensorboard.summary import hparams

    with SummaryWriter(log_dir=str(folder)) as writer:
        for step, values in step_series(step_rows).items():
            for batch, ms in enumerate(values):
                writer.add_scalar(f"step_ms/{step}", ms, batch)
        if record.camera_frames is not None:
            # The x axis is the frame's order among its camera's measured frames detected.
            for stream, points in camera_series(record.camera_frames.rows).items():
                for order, (_, ms) in enumerate(points):
                    writer.add_scalar(f"camera_latency_ms/{stream}", ms, order)
        for measurement in measurements():
            if measurement.key in record.measured:
                measurement.scalars(writer, record.measured[measurement.key])
        _images(writer, run_path / layout.IMAGES_DIR)
        writer.add_text("summary", summary_markdown(summary))
        metrics = {f"{HEADLINE_TAG}{name}": value for name, value in figures.items()}
        for event in hparams(hparam_values(flat_config), metrics):
            writer.file_writer.add_summary(event)
        for tag, value in metrics.items():
            writer.add_scalar(tag, value, 0)


def _images(writer, folder: Path) -> None:
    """The first few annotated images, downscaled."""
    paths = sorted(path for path in folder.rglob("*") if path.is_file() and not path.name.startswith("."))
    for path in paths[:IMAGES_SHOWN]:
        image = cv2.imread(str(path))
        if image is not None:
            writer.add_image(f"images/{path.relative_to(folder).as_posix()}",
                             cv2.cvtColor(downscaled(image), cv2.COLOR_BGR2RGB), dataformats="HWC")
