"""The config keys of what YOLO and exported files share, declared once (light: the config schema reads them)."""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field


class LetterboxKeys(BaseModel):
    """The letterbox's own key, for every family that letterboxes."""

    pad_value: int = Field(114, ge=0, le=255, description="yolo, exported: letterbox padding grey level")


class NmsKeys(BaseModel):
    """NMS's own key, for every family whose detections go through YOLO's NMS."""

    agnostic: Optional[bool] = Field(None, description=(
        "yolo, exported: true: one NMS over every class at once (class-agnostic); false: class by class; null: "
        "the architecture's own (YOLO's and most files': class by class; YOLOX's layouts: class-agnostic, as its "
        "demo)"))
