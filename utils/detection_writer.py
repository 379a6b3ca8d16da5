"""Streams detections, skipped files and annotated images to the run directory as batches finish."""
from __future__ import annotations

import csv
from pathlib import Path

import cv2
import numpy as np
import torch

from datasets.image_folder import LoadedImage
from utils.annotate import draw_detections

DETECTION_COLUMNS = ("image", "class_id", "class_name", "score", "x1", "y1", "x2", "y2")
SKIPPED_COLUMNS = ("image", "reason")


class DetectionWriter:
    """Rows go to disk per batch so memory stays flat however many images a dataset holds."""

    def __init__(self, run_path: Path, dataset_root: Path, names: list[str], save_images: bool, note: str | None):
        self.dataset_root = dataset_root
        self.names = names
        self.note = note
        self.images_dir = run_path / "images" if save_images else None
        self._detections_file = (run_path / "detections.csv").open("w", newline="")
        self._skipped_file = (run_path / "skipped.csv").open("w", newline="")
        self._detections = csv.writer(self._detections_file)
        self._skipped = csv.writer(self._skipped_file)
        self._detections.writerow(DETECTION_COLUMNS)
        self._skipped.writerow(SKIPPED_COLUMNS)
        self.detections_written = 0
        self.images_written = 0
        self.skipped = 0

    def relative(self, path: str) -> str:
        try:
            return Path(path).relative_to(self.dataset_root).as_posix()
        except ValueError:
            return Path(path).name

    def write_skipped(self, sample: LoadedImage) -> None:
        self._skipped.writerow((self.relative(sample.path), sample.error))
        self.skipped += 1

    def write_batch(self, samples: list[LoadedImage], detections: list[torch.Tensor]) -> None:
        for sample, det in zip(samples, detections):
            name = self.relative(sample.path)
            rows = det.detach().cpu().numpy().astype(np.float64)
            for x1, y1, x2, y2, score, cls in rows:
                cls = int(cls)
                class_name = self.names[cls] if 0 <= cls < len(self.names) else str(cls)
                self._detections.writerow((name, cls, class_name, f"{score:.5f}", f"{x1:.2f}", f"{y1:.2f}",
                                           f"{x2:.2f}", f"{y2:.2f}"))
            self.detections_written += len(rows)
            self.images_written += 1
            if self.images_dir is not None:
                target = self.images_dir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                cv2.imwrite(str(target), draw_detections(sample.image, rows, self.names, self.note))

    def flush(self) -> None:
        self._detections_file.flush()
        self._skipped_file.flush()

    def close(self) -> None:
        self._detections_file.close()
        self._skipped_file.close()
