"""The user's own application's detections, read for `match`: COCO's results JSON (a list of {image_id or
file_name, category_id, bbox as x, y, width, height, score}) or a CSV with detections.csv's columns (image,
class_id, score, x1, y1, x2, y2; class_name and frame optional). Everything is checked before anything runs: a
file that is malformed, empty, or names an image the dataset folder does not hold is one message naming the file
and what is wrong (MatchInputError, exit status 2)."""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from pipelines.contract import Detections
from utils.core.bounded_text import clipped
from utils.core.errors import UsageError

CSV_COLUMNS = ("image", "class_id", "score", "x1", "y1", "x2", "y2")
MAX_BYTES = 256 * 1024 * 1024  # a results file of millions of boxes is still far below this
SHOWN = 5  # names a message lists before it says how many more


class MatchInputError(UsageError):
    """The detections given to `match` cannot be compared; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Theirs:
    """The application's detections by image (a path under dataset.path), and what was read to get them."""

    images: dict[Path, Detections]
    file: Path
    form: str  # "COCO results JSON" or "CSV"
    class_note: str = ""  # how category ids became class indexes, where they were not indexes already

    @property
    def count(self) -> int:
        return sum(len(found) for found in self.images.values())

    def lowest_score(self) -> float:
        return min(float(found.scores.min()) for found in self.images.values() if len(found))

    def most_per_image(self) -> int:
        return max(len(found) for found in self.images.values())


@dataclass(frozen=True)
class Row:
    image: str
    class_id: int
    score: float
    box: tuple[float, float, float, float]  # x1, y1, x2, y2


def read_theirs(path: Path, dataset_images: Sequence[Path], dataset_root: Path, classes: int,
                coco_ids: Optional[Sequence[int]] = None) -> Theirs:
    """The detections file against the dataset's images. `coco_ids`: COCO's category ids of the network's
    classes in order (for a COCO results file of an 80-class network), None where its classes are indexes."""
    if not path.is_file():
        raise MatchInputError(f"--against {path}: no such file; give your application's detections as COCO's "
                              "results JSON or a CSV with detections.csv's columns")
    if path.stat().st_size > MAX_BYTES:
        raise MatchInputError(f"--against {path}: {path.stat().st_size:,} bytes, more than detections of a few "
                              f"images can hold ({MAX_BYTES:,} at most); give the detections of some images")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (UnicodeDecodeError, OSError) as error:
        raise MatchInputError(f"--against {path} is not a readable text file ({error}); give COCO's results "
                              "JSON or a CSV") from None
    if not text.strip():
        raise MatchInputError(f"--against {path} is empty: it holds no detections to match")
    form, rows, note = _coco_rows(path, text, classes, coco_ids) if text.lstrip()[:1] in "[{" else \
        ("CSV", _csv_rows(path, text), "")
    if not rows:
        raise MatchInputError(f"--against {path} holds no detections (a {form} without rows): nothing to match")
    images = _images_of(path, rows, dataset_images, dataset_root)
    outside = sorted({row.class_id for row in rows if not 0 <= row.class_id < classes})
    if outside:
        raise MatchInputError(f"--against {path}: class ids {_listed(outside)} are not among the network's "
                              f"{classes} classes (0 to {classes - 1}); give the class index the model outputs")
    found: dict[Path, list[Row]] = {image: [] for image in images.values()}
    for row in rows:
        found[images[row.image]].append(row)
    return Theirs({image: _detections(image_rows) for image, image_rows in sorted(found.items())}, path, form, note)


def _detections(rows: list[Row]) -> Detections:
    return Detections(torch.tensor([row.box for row in rows], dtype=torch.float32).reshape(-1, 4),
                      torch.tensor([row.score for row in rows], dtype=torch.float32),
                      torch.tensor([row.class_id for row in rows], dtype=torch.int64))


def _listed(values: Sequence[Any]) -> str:
    shown = ", ".join(clipped(str(value), 80) for value in values[:SHOWN])
    return shown + (f" and {len(values) - SHOWN} more" if len(values) > SHOWN else "")


def _number(path: Path, where: str, key: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise MatchInputError(f"--against {path}: {where}: {key} {clipped(repr(value), 60)} is not a number")
    return number


def _row(path: Path, where: str, image: str, class_id: Any, score: Any, box: Sequence[Any]) -> Row:
    number = _number(path, where, "class id", class_id)
    if number != int(number):
        raise MatchInputError(f"--against {path}: {where}: class id {class_id!r} is not a whole number")
    x1, y1, x2, y2 = (_number(path, where, key, value) for key, value in zip(("x1", "y1", "x2", "y2"), box))
    if x2 < x1 or y2 < y1:
        raise MatchInputError(f"--against {path}: {where}: the box ends before it starts ({x1:g}, {y1:g}, {x2:g}, "
                              f"{y2:g}); give x1, y1 at its top left")
    return Row(image, int(number), _number(path, where, "score", score), (x1, y1, x2, y2))


def _csv_rows(path: Path, text: str) -> list[Row]:
    reader = csv.DictReader(text.splitlines())
    missing = [column for column in CSV_COLUMNS if column not in (reader.fieldnames or ())]
    if missing:
        raise MatchInputError(f"--against {path}: a CSV needs the columns {', '.join(CSV_COLUMNS)} (detections.csv's; "
                              f"class_name and frame optional), and has no {', '.join(missing)}")
    rows = []
    for line, record in enumerate(reader, start=2):
        if None in record or any(record.get(column) is None for column in CSV_COLUMNS):
            raise MatchInputError(f"--against {path}: line {line} has {len(record) - (None in record)} "
                                  f"fields where the header names {len(reader.fieldnames)}")
        if (record.get("frame") or "").strip():
            raise MatchInputError(f"--against {path}: line {line} names frame {record['frame']} of "
                                  f"{record['image']}, and match compares still images: give the detections "
                                  "of images in dataset.path")
        rows.append(_row(path, f"line {line}", record["image"].strip(), record["class_id"], record["score"],
                         [record[key] for key in ("x1", "y1", "x2", "y2")]))
    return rows


def _coco_rows(path: Path, text: str, classes: int, coco_ids: Optional[Sequence[int]]):
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as error:
        raise MatchInputError(f"--against {path} is not valid JSON ({error}); give COCO's results JSON or a "
                              "CSV") from None
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise MatchInputError(f"--against {path}: COCO's results JSON is a list of detections "
                              "({\"image_id\", \"category_id\", \"bbox\", \"score\"}), and this is not one")
    rows = []
    for index, entry in enumerate(entries):
        where = f"detection {index}"
        image = entry.get("file_name", entry.get("image_id"))
        missing = [key for key in ("category_id", "bbox", "score") if key not in entry]
        if image is None or missing:
            raise MatchInputError(f"--against {path}: {where} has no {', '.join(missing or ['image_id or file_name'])}")
        bbox = entry["bbox"]
        if not isinstance(bbox, list) or len(bbox) != 4:
            raise MatchInputError(f"--against {path}: {where}: bbox {clipped(repr(bbox), 60)} is not [x, y, width, "
                                  "height]")
        x, y, w, h = (_number(path, where, "bbox", value) for value in bbox)
        rows.append(_row(path, where, str(image), entry["category_id"], entry["score"], (x, y, x + w, y + h)))
    ids = {row.class_id for row in rows}
    if coco_ids and not ids <= set(range(classes)) and ids <= set(coco_ids):
        mapped = [Row(row.image, list(coco_ids).index(row.class_id), row.score, row.box) for row in rows]
        return "COCO results JSON", mapped, "category ids read as COCO's (1 to 90) and mapped to the 80 classes"
    return "COCO results JSON", rows, ""


def _images_of(path: Path, rows: list[Row], dataset_images: Sequence[Path], root: Path) -> dict[str, Path]:
    """Each name the file uses -> the dataset image it names: its path under dataset.path, its file name where
    that is unique, or (COCO's image ids) the number its file name is."""
    by_relative = {image.relative_to(root).as_posix(): image for image in dataset_images}
    by_name: dict[str, list[Path]] = {}
    by_number: dict[str, list[Path]] = {}
    for image in dataset_images:
        by_name.setdefault(image.name, []).append(image)
        if image.stem.isdigit():
            by_number.setdefault(str(int(image.stem)), []).append(image)
    found, unknown, ambiguous = {}, [], []
    for name in sorted({row.image for row in rows}):
        candidates = ([by_relative[name]] if name in by_relative else by_name.get(Path(name).name)
                      or by_number.get(name.strip() if name.strip().isdigit() else "", []))
        if not candidates:
            unknown.append(name)
        elif len(candidates) > 1:
            ambiguous.append(name)
        else:
            found[name] = candidates[0]
    if unknown:
        raise MatchInputError(f"--against {path} names {len(unknown)} image(s) dataset.path {root} does not hold: "
                              f"{_listed(unknown)}; set dataset.path to the folder of the images your application "
                              "ran on, or give only their detections")
    if ambiguous:
        raise MatchInputError(f"--against {path}: {_listed(ambiguous)} name(s) more than one image under "
                              f"dataset.path {root}; give each image's path under it")
    return found
