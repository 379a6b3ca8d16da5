"""Whether two runs of one way of computing gave the same detections (detections.csv, in original pixels), at
the strict bar of the equal-detections check: one-to-one matches at IoU 0.9 with the score within 0.01, recall
and precision at least 0.99 (utils.checks.agreement.matching). A batch size or thread count reuses its way's accuracy
verdict only where this holds; after a first look, over the images both timed.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Collection, Optional

import pandas as pd
import torch

from utils.checks.agreement.matching import MatchCounts, VerdictThresholds, match_detections
from utils.storage import layout


def _per_image(path: Path) -> dict[str, SimpleNamespace]:
    table = pd.read_csv(path)
    images = {}
    for image, rows in table.groupby("image"):
        images[image] = SimpleNamespace(
            boxes=torch.tensor(rows[["x1", "y1", "x2", "y2"]].to_numpy(dtype=float)),
            scores=torch.tensor(rows["score"].to_numpy(dtype=float)),
            labels=torch.tensor(rows["class_id"].to_numpy(dtype=int)))
    return images


def _empty() -> SimpleNamespace:
    return SimpleNamespace(boxes=torch.zeros((0, 4), dtype=torch.float64), scores=torch.zeros(0, dtype=torch.float64),
                           labels=torch.zeros(0, dtype=torch.int64))


def same_detections(judged_run: Path, other_run: Path, images: Optional[Collection[str]] = None) -> tuple[bool, str]:
    """(equal, what was compared) between the detections of two run directories, over `images` (detections.csv's
    names; None: every image either holds), the images both timed when one was a first look."""
    judged, other = _per_image(judged_run / layout.DETECTIONS), _per_image(other_run / layout.DETECTIONS)
    counts = MatchCounts()
    compared = set(judged) | set(other) if images is None else set(images)
    for image in sorted(compared):
        counts += match_detections(judged.get(image, _empty()), other.get(image, _empty()))
    bar = VerdictThresholds()
    equal = counts.strict_recall >= bar.equal_min_recall and counts.strict_precision >= bar.equal_min_precision
    return equal, (f"strict recall {counts.strict_recall:.3f}, precision {counts.strict_precision:.3f} over "
                   f"{counts.reference} detections" + ("" if images is None else f" of {len(compared)} image(s)"))
