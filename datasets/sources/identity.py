"""A video frame named before it is decoded: which file, which frame, its timestamp and size. What labels are
matched to (datasets/labels.py), as an image's path is for a still image."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class FrameRef:
    video: Path
    index: int  # in presentation order, from 0: detections.csv's `frame`
    pts_s: Optional[float]  # detections.csv's `pts_s`
    width: int  # of the upright frame
    height: int
    video_frames: int  # how many frames the video holds, selected or not

    def label_stem(self) -> str:
        """The frame's YOLO label file within the video's label folder: its index in six digits."""
        return f"{self.index:06d}"
