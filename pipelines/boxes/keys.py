"""The config keys of what YOLO and exported files share, declared once (light: the config schema reads them)."""
from __future__ import annotations

from pydantic import BaseModel, Field


class LetterboxKeys(BaseModel):
    """The letterbox's own key, for every family that letterboxes."""

    pad_value: int = Field(114, ge=0, le=255, description="yolo, exported: letterbox padding grey level")
