"""Checks on ground truth before it is trusted: labels that match no image (or few), entries named twice, and
json too deep or too large to read safely. A mismatch that went unnoticed scored mAP 0 with recall 1."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Sequence

from datasets.image_folder import DatasetError
from utils.core.bounded_text import clipped, shown

# COCO train2017's instances file is 448 MB; a file above this would take several times its size in memory.
MAX_JSON_BYTES = 1 << 30
MAX_LABEL_FILE_BYTES = 16 << 20  # a YOLO text file: 40 bytes per object, so about 400,000 objects
FEW_MATCHED = 0.5  # below this share of the images with labels, the run warns


class LabelError(DatasetError):
    """Ground truth that cannot be read as given; the message names the file (and line) and the fix."""


def read_json(path: Path) -> Any:
    """The parsed document, or LabelError: too large, too deeply nested, not text, not json."""
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise LabelError(f"dataset.labels {clipped(str(path))} is {size:,} bytes, more than a COCO file read here "
                         f"may be ({MAX_JSON_BYTES:,}); split it, or keep only the images of dataset.path")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise LabelError(f"dataset.labels {clipped(str(path))} nests its values deeper than json can be read here "
                         "(a COCO file nests 4 levels); it is not a COCO annotations file") from None
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as error:
        raise LabelError(f"dataset.labels {clipped(str(path))} is neither a folder of YOLO label files nor valid "
                         f"COCO json ({str(error)[:120]})") from None


def read_label_text(path: Path) -> str:
    size = path.stat().st_size
    if size > MAX_LABEL_FILE_BYTES:
        raise LabelError(f"{clipped(str(path))} is {size:,} bytes, more than a YOLO label file can need "
                         f"({MAX_LABEL_FILE_BYTES:,}: one `class cx cy w h` line per object)")
    return path.read_text(encoding="utf-8", errors="replace")


def twice(pairs: Sequence[tuple[Any, str]], what: str, source: str, fix: str) -> None:
    """LabelError naming both entries when a value is given twice; `pairs`: (value, where it is)."""
    first: dict[Any, str] = {}
    for value, where in pairs:
        if value in first:
            raise LabelError(f"{source}: {what} {shown(value, 80)} is given twice, by {first[value]} and by {where}; "
                             f"{fix}")
        first[value] = where


def no_match(labels: str, label_example: Optional[str], root: Path, image_example: str, how: str) -> LabelError:
    """Nothing in the labels names an image of the run: both folders and one example stem of each."""
    theirs = (f"e.g. {shown(label_example, 80)}" if label_example is not None else "none at all")
    return LabelError(
        f"dataset.labels {clipped(labels)} matches no image of dataset.path {clipped(str(root))} ({how}): "
        f"labels name {theirs}; the images are e.g. {shown(image_example, 80)}. Point dataset.labels at the "
        "labels of these images, or dataset.path at the images of these labels")


def coverage_warning(source: str, matched: int, images: int, unused: int) -> Optional[str]:
    """A warning when only a few of the run's images have labels (the rest count as images without objects)."""
    if images == 0 or matched >= FEW_MATCHED * images:
        return None
    unused_text = f"; {unused:,} of its label entries name no image of the run" if unused else ""
    return (f"dataset.labels {clipped(source)}: only {matched:,} of the {images:,} images have labels{unused_text}; "
            f"the other {images - matched:,} are scored as images without objects, so the mAP says little. Check "
            "that dataset.labels belongs to dataset.path")
