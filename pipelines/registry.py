"""Detector families by name, and the one that builds a given `model.arch`. A new family is a folder beside
these with a light `facts.py` and a `family.py`, and one line here naming the folder.

Only the facts are imported here (the config schema reads them); a family module, which imports torch, is
imported when a run builds its network.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Optional

from pipelines.runtimes import registry as runtimes
from pipelines.settings import ForwardTiming
from utils.core.errors import UsageError

if TYPE_CHECKING:
    from pipelines.contract import DetectorFamily, FamilyFacts

FAMILIES = (
    "yolo",
    "rcnn",
    "dense",
    "exported",
)

FACTS: tuple["FamilyFacts", ...] = tuple(importlib.import_module(f"pipelines.{name}.facts") for name in FAMILIES)


class UnknownArchitecture(UsageError, ValueError):
    pass


def facts_for(arch: str) -> "FamilyFacts":
    for facts in FACTS:
        if facts.accepts(arch):
            return facts
    raise UnknownArchitecture(f"model.arch {arch!r} is not a known architecture: use {known_architectures()}")


def _file_families() -> tuple["FamilyFacts", ...]:
    """The families with no architecture of their own: they read only files, given as model.file."""
    return tuple(facts for facts in FACTS if facts.ARCH_FILES and not facts.ARCHS)


def known_files() -> str:
    """What model.file may be, for a message."""
    return " or ".join(facts.ARCH_FILE_TEXT for facts in _file_families())


def detector_files_in(folder: Path) -> list[Path]:
    """The files in `folder` a file family reads, by name (an exporter's folder, Ultralytics' `*_openvino_model/`)."""
    suffixes = tuple(suffix for facts in _file_families() for suffix in facts.ARCH_FILES)
    return sorted(child for child in folder.iterdir() if child.is_file() and child.suffix in suffixes)


def known_architectures() -> str:
    """What model.arch may be, for a message: "one of a, b, c or a path to ..."."""
    files = " or ".join(facts.ARCH_FILE_TEXT for facts in FACTS if facts.ARCH_FILES)
    return f"one of {', '.join(a for facts in FACTS for a in facts.ARCHS)}" + (f" or {files}" if files else "")


def family_for(arch: str) -> "DetectorFamily":
    module: ModuleType = importlib.import_module(f"pipelines.{facts_for(arch).NAME}.family")
    return module  # type: ignore[return-value]


def runtime_refusal(facts: "FamilyFacts", runtime: Any, source: str = "") -> Optional[str]:
    """Why the config's runtime section cannot run this family, or None when it can: a forward timed in parts
    needs a runtime that runs the torch modules themselves, uncompiled; then whatever the family itself refuses."""
    if facts.FORWARD_TIMING == ForwardTiming.PARTS:
        keeping = runtimes.keeping_modules()
        if runtime.backend not in [spec.name for spec in keeping]:
            advice = " or ".join(f"{spec.name} (precision {' or '.join(spec.precisions)})" for spec in keeping)
            return (f"runtime.backend {runtime.backend} is not supported for this family ({facts.NAME}, model.arch "
                    f"{', '.join(facts.ARCHS)}): its forward is timed in parts that an exported graph does not "
                    f"keep apart; use runtime.backend {advice}")
        if getattr(runtime, "compile", False):
            return (f"runtime.compile is not supported for this family ({facts.NAME}): its forward is timed in "
                    "parts with hooks, which break a compiled graph; remove runtime.compile")
    spec = runtimes.SPECS.get(runtime.backend)
    file_kinds = {kind for other in runtimes.SPECS.values() for kind in other.file_kinds}
    if spec is not None and spec.files_only and Path(source).suffix not in file_kinds:
        readers = [other.name for other in runtimes.SPECS.values() if not other.files_only]
        return (f"runtime.backend {spec.name} runs a {' or '.join(spec.file_kinds)} file given as model.file, and "
                f"has no exporter for a network built in torch ({facts.NAME}); use runtime.backend "
                f"{' or '.join(readers)}, or give the detector as a {' or '.join(spec.file_kinds)} file")
    return facts.unsupported_runtime(runtime, source)
