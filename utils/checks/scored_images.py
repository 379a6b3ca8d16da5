"""Which items (images, or video frames) each pass scores: int8 is calibrated on items the accuracy and agreement
passes never score, and the agreement check, with labels, runs on the items the accuracy pass scores."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from datasets.item_batches import Item
from datasets.sources.identity import FrameRef
from pipelines.runtimes.base import RuntimeNotSupported


def calibration_split(items: Sequence[Item], images: int, own_items: Optional[Sequence[Item]],
                      ) -> tuple[list[Item], list[Item]]:
    """(calibration items, scored items). With `runtime.calibration.path` (`own_items`), its first `images`
    calibrate and every run item is scored; without it, the run's last items calibrate (at most half of
    them, at most `images`) and only the ones before them are scored."""
    if own_items is not None:
        calibration = list(own_items[:images])
        shared = set(calibration) & set(items)
        if shared:
            first = min(shared, key=lambda item: item_name(item, Path("/")))
            raise RuntimeNotSupported(f"runtime.calibration.path holds {len(shared)} of the images or frames the "
                                      f"run scores (e.g. {item_name(first, Path('/'))}): int8 would be judged on "
                                      "what it was calibrated on; point it at other images or another video")
        return calibration, list(items)
    if len(items) < 2:
        raise RuntimeNotSupported("runtime.precision int8 needs images to calibrate on that are not scored: the "
                                  f"dataset has {len(items)} image(s) or frame(s); set runtime.calibration.path to a "
                                  "folder of other images (or a video), or give dataset.path at least 2")
    count = min(images, len(items) // 2)
    return list(items[len(items) - count:]), list(items[:len(items) - count])


def item_name(item: Item, base: Path) -> str:
    """An image by its path relative to `base`, a frame as `<its video relative to base> frame <index>`."""
    path = item.video if isinstance(item, FrameRef) else item
    try:
        name = path.relative_to(base).as_posix()
    except ValueError:
        name = str(path)
    return f"{name} frame {item.index}" if isinstance(item, FrameRef) else name


def calibration_document(calibration: Sequence[Item], scored: Sequence[Item], root: Path,
                         own_path: Optional[str]) -> dict:
    """summary.json `calibration`: which images or frames calibrated int8, named relative to their folder."""
    base = Path(own_path) if own_path else root
    base = base.parent if base.is_file() else base  # a single video: its frames named by its file name
    kind = "frames" if any(isinstance(item, FrameRef) for item in calibration) else "images"
    return {"source": "runtime.calibration.path" if own_path else f"the dataset's last {kind}, never scored",
            "path": str(Path(own_path) if own_path else root), "images": len(calibration),
            "files": [item_name(item, base) for item in calibration], "scored_images": len(scored)}


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
