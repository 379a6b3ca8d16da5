"""Detector families by name, and the one that builds a given `model.arch`. A new family is a folder beside
these with a light `facts.py` and a `family.py`, and one line here naming the folder.

Only the facts are imported here (the config schema reads them); a family module, which imports torch, is
imported when a run builds its network.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from utils.errors import UsageError

if TYPE_CHECKING:
    from pipelines.contract import DetectorFamily, FamilyFacts

FAMILIES = (
    "yolo",
    "rcnn",
)

FACTS: tuple["FamilyFacts", ...] = tuple(importlib.import_module(f"pipelines.{name}.facts") for name in FAMILIES)


class UnknownArchitecture(UsageError, ValueError):
    pass


def facts_for(arch: str) -> "FamilyFacts":
    for facts in FACTS:
        if facts.accepts(arch):
            return facts
    raise UnknownArchitecture(f"model.arch {arch!r} is not a known architecture: use {known_architectures()}")


def known_architectures() -> str:
    """What model.arch may be, for a message: "one of a, b, c or a path to ..."."""
    files = " or ".join(facts.ARCH_FILE_TEXT for facts in FACTS if facts.ARCH_FILES)
    return f"one of {', '.join(a for facts in FACTS for a in facts.ARCHS)}" + (f" or {files}" if files else "")


def family_for(arch: str) -> "DetectorFamily":
    module: ModuleType = importlib.import_module(f"pipelines.{facts_for(arch).NAME}.family")
    return module  # type: ignore[return-value]
