"""A finished camera run read back for the capacity search: its measured frames (cameras_frames.csv) judged against
the bounds (utils/commands/capacity/point.py), the figures capacity.csv shows, and one camera's isolated costs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from utils.commands.capacity.bound import IsolatedCosts, isolated_costs
from utils.commands.capacity.point import Bounds, PointReading, WindowFrames, judge
from utils.scenarios.cameras.frames import DROPPED
from utils.storage import layout
from utils.storage.finished_run import FinishedRun, RunFilesError

CPU_PARTS = ("decode", "preprocess", "forward", "postprocess")


@dataclass(frozen=True)
class CameraPoint:
    figures: dict  # capacity.csv's figures of the run
    reading: PointReading
    costs: Optional[IsolatedCosts]


def window_frames(run: FinishedRun) -> WindowFrames:
    """The window's measured frames, on the run's clock; RunFilesError when the run has none to judge."""
    section = run.summary.get("cameras") or {}
    window = section.get("window") or {}
    frames = run.camera_window()
    if frames is None or window.get("start_s") is None:
        why = section.get("reason") or f"not a camera run, or its {layout.CAMERA_FRAMES} is unreadable"
        raise RunFilesError(f"{run.path}: no camera window was measured ({why})")
    return WindowFrames(frames["arrival_s"].to_numpy(dtype=float), frames["latency_ms"].to_numpy(dtype=float),
                        (frames["outcome"] == DROPPED).to_numpy(), float(window["start_s"]), float(window["end_s"]))


def _figures(run: FinishedRun) -> dict:
    section = run.summary["cameras"]
    total = section["total"]
    per_frame = total.get("cpu_ms_per_frame") or {}
    contention = run.summary.get("contention") or {}
    load = contention.get("load_average_start") or [None]
    return {"window_s": section.get("window_s"), "fps_detected": total.get("fps_detected"),
            "delivered": total.get("delivered"), "detected": total.get("detected"), "dropped": total.get("dropped"),
            **{f"{part}_cpu_ms": per_frame.get(part) for part in CPU_PARTS},
            "cpu_ms_per_frame": per_frame.get("cpu"),
            "other_processes_cpu_share": contention.get("other_processes_cpu_share"),
            "free_cores": contention.get("free_cores"), "load_average": load[0]}


def camera_point(run: FinishedRun, bounds: Bounds) -> CameraPoint:
    """RunFilesError when its files cannot say."""
    frames = window_frames(run)
    return CameraPoint(_figures(run), judge(frames, bounds), isolated_costs(run.summary["cameras"]))
