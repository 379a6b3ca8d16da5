"""Detector families by name, and the one that builds a given `model.arch`. A new family adds one line here."""
from __future__ import annotations

from pipelines.contract import DetectorFamily
from pipelines.rcnn import family as rcnn
from pipelines.yolo import family as yolo
from utils.errors import UsageError

FAMILIES: tuple[DetectorFamily, ...] = (yolo, rcnn)


class UnknownArchitecture(UsageError, ValueError):
    pass


def family_for(arch: str) -> DetectorFamily:
    for family in FAMILIES:
        if family.accepts(arch):
            return family
    known = ", ".join(a for family in FAMILIES for a in family.ARCHS)
    raise UnknownArchitecture(f"model.arch {arch!r} is not a known architecture: use one of {known} "
                              "or a path to a YOLOv7-format model-definition .yaml file")
