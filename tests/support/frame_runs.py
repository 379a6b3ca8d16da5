"""A clip of moving shapes with its per-frame labels, beside the same frames as PNG files with per-image labels, and
what two runs on them answered, frame by frame: the datasets and the comparison of the goal's runs (a video's
decoded frames detected as the same frames given as PNG files; tests/whole_runs/test_video_runs.py, and
benchmarks/studies/clip_vs_frames.py on the issue's 720p clip)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import av
import cv2
import pandas as pd
import torch

from tests.support.clips import Scene, write_clip, write_yolo_labels
from utils.checks.agreement.matching import MatchCounts, match_detections


@dataclass(frozen=True)
class ClipAndFrames:
    clip: Path
    labels: Path  # YOLO, one file per frame: labels/<clip without suffix>/<frame:06d>.txt
    frames: Path  # every decoded frame as <frame:06d>.png, PyAV's BGR written losslessly
    frame_labels: Path  # the same boxes, one file per PNG: frame_labels/<frame:06d>.txt
    count: int


def clip_and_frames(folder: Path, scene: Scene, fps: int = 15, codec: str = "libx264") -> ClipAndFrames:
    suffix = ".mp4" if codec == "libx264" else ".avi"
    clip = write_clip(folder / f"shapes{suffix}", scene, fps=fps, codec=codec)
    labels = write_yolo_labels(folder / "labels", clip.name, scene)
    frames, frame_labels = folder / "frames", folder / "frame_labels"
    frames.mkdir()
    frame_labels.mkdir()
    with av.open(str(clip)) as container:
        for index, frame in enumerate(container.decode(video=0)):
            assert cv2.imwrite(str(frames / f"{index:06d}.png"), frame.to_ndarray(format="bgr24"))
    for label in (labels / clip.stem).iterdir():
        (frame_labels / label.name).write_text(label.read_text())
    return ClipAndFrames(clip, labels, frames, frame_labels, scene.frames)


NONE = SimpleNamespace(boxes=torch.zeros((0, 4), dtype=torch.float64), scores=torch.zeros(0, dtype=torch.float64),
                       labels=torch.zeros(0, dtype=torch.int64))


def detections_by_frame(run: Path, video: bool, cut: float = 0.0) -> dict[int, SimpleNamespace]:
    """A run's detections.csv rows scoring at least `cut`, by frame index: a video's `frame` column, a PNG's file
    name."""
    table = pd.read_csv(run / "detections.csv")
    table = table[table["score"] >= cut]
    keys = table["frame"].astype(int) if video else table["image"].map(lambda name: int(Path(name).stem))
    return {int(key): SimpleNamespace(boxes=torch.tensor(rows[["x1", "y1", "x2", "y2"]].to_numpy(), dtype=torch.float64),
                                      scores=torch.tensor(rows["score"].to_numpy(), dtype=torch.float64),
                                      labels=torch.tensor(rows["class_id"].to_numpy()))
            for key, rows in table.groupby(keys)}


def frame_agreement(png_run: Path, video_run: Path, frames: int, cut: float = 0.0) -> MatchCounts:
    """The video run's detections matched to the PNG run's, frame by frame, over every frame (those scoring at
    least `cut`)."""
    wanted, found = detections_by_frame(png_run, False, cut), detections_by_frame(video_run, True, cut)
    return sum((match_detections(wanted.get(index, NONE), found.get(index, NONE)) for index in range(frames)),
               MatchCounts())


def summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())
