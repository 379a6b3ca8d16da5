"""The config keys of what YOLO and exported files share, declared once (light: the config schema reads them)."""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field


class LetterboxKeys(BaseModel):
    """The letterbox's own key, for every family that letterboxes."""

    pad_value: Optional[int] = Field(None, ge=0, le=255, description=(
        "yolo, exported: letterbox padding grey level; null: the architecture's or the layout's own (114 for "
        "YOLO and Ultralytics' letterbox, 0 for MediaPipe's)"))


class NmsKeys(BaseModel):
    """NMS's own key, for every family whose detections go through YOLO's NMS."""

    agnostic: Optional[bool] = Field(None, description=(
        "yolo, exported: true: one NMS over every class at once (class-agnostic); false: class by class; null: "
        "the architecture's own (YOLO's and most files': class by class; YOLOX's layouts: class-agnostic, as its "
        "demo)"))
