"""Config keys that were renamed, old dotted path -> new: a config that still uses an old name ends with a
message naming the new one, and a run directory written before the rename reads back under the new names."""
from __future__ import annotations

import copy
from typing import Any

# One name for each shared setting in every family (pipelines/settings.py); R-CNN had torchvision's own.
RENAMED = {
    "preprocess.min_size": "preprocess.img_size",
    "postprocess.box_score_thresh": "postprocess.conf_thres",
    "postprocess.box_nms_thresh": "postprocess.iou_thres",
    "postprocess.detections_per_img": "postprocess.max_det",
}


def renamed_in(data: Any) -> list[tuple[str, str]]:
    """(old, new) for every old key the config data holds."""
    found = []
    for old, new in RENAMED.items():
        section, _, key = old.partition(".")
        if isinstance(data, dict) and isinstance(data.get(section), dict) and key in data[section]:
            found.append((old, new))
    return found


def with_new_names(data: Any) -> Any:
    """A copy of config data with every old key moved to its new name (a new key already there wins)."""
    moved = copy.deepcopy(data)
    for old, new in renamed_in(moved):
        section, _, key = old.partition(".")
        value = moved[section].pop(key)
        moved[section].setdefault(new.partition(".")[2], value)
    return moved
