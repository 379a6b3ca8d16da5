"""Streams detections, skipped files and annotated images to the run directory as batches finish.

Rows go to disk per batch so memory stays flat however many images a dataset holds, and so a run killed without
warning (SIGKILL, the OOM killer) keeps the detections of every batch it completed: both CSVs grow under their
real names by one write and a flush per batch, whole rows only. A write that fails removes the file: a failed
run never leaves one cut mid-row.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import cv2
import numpy as np

from datasets.image_folder import LoadedImage
from pipelines.contract import Detections
from utils.storage import layout
from utils.detections.annotate import draw_detections
from utils.storage.atomic import OutputWriteError, atomic_write_bytes
from utils.detections.masks import label_map
from utils.storage.streamed_csv import StreamedCsv

# `frame` and `pts_s` name a video frame within `image` (the video); both are empty for a still image.
DETECTION_COLUMNS = ("image", "class_id", "class_name", "score", "x1", "y1", "x2", "y2", "frame", "pts_s")
SKIPPED_COLUMNS = ("image", "reason", "frame", "pts_s")


class DetectionWriter:
    def __init__(self, run_path: Path, dataset_root: Path, names: list[str], save_images: bool,
                 note: Optional[str]):
        self.dataset_root = dataset_root
        self.names = names
        self.note = note
        self.images_dir = run_path / layout.IMAGES_DIR if save_images else None
        self.masks_dir = run_path / layout.MASKS_DIR
        self._detections = StreamedCsv(run_path / layout.DETECTIONS, DETECTION_COLUMNS)
        try:
            self._skipped = StreamedCsv(run_path / layout.SKIPPED, SKIPPED_COLUMNS)
        except BaseException:
            self._detections.discard()
            raise
        self.detections_written = 0
        self.images_written = 0
        self.skipped = 0

    def relative(self, path: str) -> str:
        try:
            return Path(path).relative_to(self.dataset_root).as_posix()
        except ValueError:
            return Path(path).name

    def write_skipped(self, sample: LoadedImage) -> None:
        self._skipped.write((self.relative(sample.path), sample.error, *frame_fields(sample)))
        self.skipped += 1

    def write_batch(self, samples: list[LoadedImage], detections: list[Detections], pictures: bool = True) -> None:
        """The rows of each image's detections and, with `pictures`, its annotated copy and masks."""
        for sample, found in zip(samples, detections):
            name = self.relative(sample.path)
            frame = frame_fields(sample)
            rows = detection_rows(found)
            for x1, y1, x2, y2, score, cls in rows:
                cls = int(cls)
                class_name = self.names[cls] if 0 <= cls < len(self.names) else str(cls)
                self._detections.write((name, cls, class_name, f"{score:.5f}", f"{x1:.2f}", f"{y1:.2f}",
                                        f"{x2:.2f}", f"{y2:.2f}", *frame))
            self.detections_written += len(rows)
            self.images_written += 1
            if pictures:
                self._picture(sample, found, rows)

    def write_pictures(self, samples: list[LoadedImage], detections: list[Detections]) -> None:
        """Annotated copies (and masks) of images whose rows are written already."""
        for sample, found in zip(samples, detections):
            self._picture(sample, found, detection_rows(found))

    def _picture(self, sample: LoadedImage, found: Detections, rows: np.ndarray) -> None:
        picture = picture_name(self.relative(sample.path), sample.frame)
        masks = None if found.masks is None else found.masks.detach().cpu().numpy()
        if masks is not None:
            self._save_png(self.masks_dir / Path(picture).with_suffix(".png"), label_map(masks))
        if self.images_dir is not None:
            self._save_image(self.images_dir / picture,
                             draw_detections(sample.image, rows, self.names, self.note, masks))

    @staticmethod
    def _save_image(target: Path, image: np.ndarray) -> None:
        extension = target.suffix if cv2.haveImageWriter(f"x{target.suffix}") else ".png"
        ok, encoded = cv2.imencode(extension, image)
        if not ok:
            raise OutputWriteError(target, OSError(f"OpenCV could not encode the image as {extension}"))
        atomic_write_bytes(target if extension == target.suffix else target.with_suffix(extension),
                           encoded.tobytes())

    @staticmethod
    def _save_png(target: Path, image: np.ndarray) -> None:
        ok, encoded = cv2.imencode(".png", image)
        if not ok:
            raise OutputWriteError(target, OSError("OpenCV could not encode the mask label map as PNG"))
        atomic_write_bytes(target, encoded.tobytes())

    def flush(self) -> None:
        """The batch's rows to the operating system: called after each batch, outside its timing."""
        try:
            self._detections.flush()
            self._skipped.flush()
        except BaseException:
            self.discard()  # a failed run leaves no half of the pair behind
            raise

    def close(self) -> None:
        """Flush, sync and close both CSVs; call once, after the last batch (also after Ctrl-C). When one
        cannot be written, the other goes too: a failed run leaves no half of the pair behind."""
        try:
            self._detections.publish()
        except BaseException:
            self._skipped.discard()
            raise
        self._skipped.publish()

    def discard(self) -> None:
        self._detections.discard()
        self._skipped.discard()


def frame_fields(sample: LoadedImage) -> tuple[str, str]:
    """A video frame's `frame` and `pts_s` cells; empty for a still image (and a pts the source lacks)."""
    if sample.frame is None:
        return "", ""
    return str(sample.frame), "" if sample.pts_s is None else f"{sample.pts_s:.6f}"


def picture_name(name: str, frame: Optional[int]) -> str:
    """Where an image's annotated copy goes under images/: a video's frames in a folder named after the video,
    `clip/000042.png` (PNG: the encoder of an image file's own suffix is not at hand for a video's)."""
    return name if frame is None else f"{Path(name).with_suffix('').as_posix()}/{frame:06d}.png"


def detection_rows(found: Detections) -> np.ndarray:
    """(n, 6) float64 rows of x1, y1, x2, y2, score, class."""
    if len(found) == 0:
        return np.zeros((0, 6))
    return np.column_stack((found.boxes.detach().cpu().numpy(), found.scores.detach().cpu().numpy(),
                            found.labels.detach().cpu().numpy())).astype(np.float64)
