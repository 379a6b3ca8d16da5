"""Which images each pass scores: int8 is calibrated on images the accuracy and agreement passes never score,
and the agreement check, with labels, runs on the images the accuracy pass scores."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from pipelines.runtimes.base import RuntimeNotSupported


def calibration_split(paths: Sequence[Path], images: int, own_images: Optional[Sequence[Path]],
                      ) -> tuple[list[Path], list[Path]]:
    """(calibration images, scored images). With `runtime.calibration.path` (`own_images`), its first `images`
    calibrate and every run image is scored; without it, the run's last images calibrate (at most half of
    them, at most `images`) and only the ones before them are scored."""
    if own_images is not None:
        calibration = list(own_images[:images])
        shared = set(calibration) & set(paths)
        if shared:
            raise RuntimeNotSupported(f"runtime.calibration.path holds {len(shared)} of the images the run scores "
                                      f"(e.g. {sorted(shared)[0]}): int8 would be judged on what it was "
                                      "calibrated on; point it at other images")
        return calibration, list(paths)
    if len(paths) < 2:
        raise RuntimeNotSupported("runtime.precision int8 needs images to calibrate on that are not scored: the "
                                  f"dataset has {len(paths)} image(s); set runtime.calibration.path to a folder "
                                  "of other images, or give dataset.path at least 2 images")
    count = min(images, len(paths) // 2)
    return list(paths[len(paths) - count:]), list(paths[:len(paths) - count])


def calibration_document(calibration: Sequence[Path], scored: Sequence[Path], root: Path,
                         own_path: Optional[str]) -> dict:
    """summary.json `calibration`: which images calibrated int8, named relative to their folder."""
    base = Path(own_path) if own_path else root

    def name(path: Path) -> str:
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            return str(path)

    return {"source": "runtime.calibration.path" if own_path else "the dataset's last images, never scored",
            "path": str(base), "images": len(calibration), "files": [name(p) for p in calibration],
            "scored_images": len(scored)}


def more_images(label_free: Optional[dict], used: int, available: int, cap: int) -> Optional[int]:
    """How many images to score next when the label-free verdict is undecided and more images would decide
    it: its own estimate, at most `cap` and the images there are. None: stop here."""
    if not label_free or label_free["verdict"] != "undecided" or not label_free.get("images_needed"):
        return None
    wanted = min(label_free["images_needed"], cap, available)
    return wanted if wanted > used else None


def agreement_count(configured: int, set_by_user: bool, labelled: bool, accuracy_images: int) -> int:
    """`benchmark.agreement.images` when the config sets it; with labels, otherwise, as many images as the
    accuracy pass scores, so the detections verdict rests on the same images as the mAP."""
    if set_by_user or not labelled:
        return configured
    return max(configured, accuracy_images)
