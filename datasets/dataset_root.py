"""The dataset's folder or video file, checked before any image or video library loads, so a wrong dataset.path is
answered at once."""
from __future__ import annotations

from pathlib import Path

from datasets.sources.locations import VIDEO_SUFFIXES, is_video_file
from utils.core.bounded_text import LIMIT, clipped
from utils.core.errors import UsageError


class DatasetError(UsageError):
    pass


def check_dataset_root(root: str | Path) -> Path:
    """The folder dataset.path names; DatasetError when it is missing or not a folder."""
    root = Path(root)
    shown_root = clipped(str(root), LIMIT)
    if not root.exists():
        raise DatasetError(f"dataset.path {shown_root} does not exist; point dataset.path at a folder of images, e.g. "
                           f"--set dataset.path=datasets/samples (docs/models.md, imagenet-mini, says where to "
                           f"get that dataset and where to unpack it)")
    if not root.is_dir():
        raise DatasetError(f"dataset.path {shown_root} is not a folder; point dataset.path at a folder of images")
    return root


def check_dataset_path(path: str | Path) -> Path:
    """What dataset.path names: a folder (of images or of videos) or a video file; DatasetError otherwise."""
    path = Path(path)
    if path.is_file():
        if not is_video_file(path):
            raise DatasetError(f"dataset.path {clipped(str(path), LIMIT)} is a file but not a video "
                               f"({', '.join(VIDEO_SUFFIXES)}); point it at a video, or at a folder of images or "
                               "videos")
        return path
    return check_dataset_root(path)
