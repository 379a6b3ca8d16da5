"""Instance masks as one PNG label map per image: the format a user loads with any image library."""
from __future__ import annotations

import numpy as np

MAX_INSTANCES = np.iinfo(np.uint16).max


def label_map(masks: np.ndarray) -> np.ndarray:
    """(N, H, W) boolean masks -> (H, W) uint16: 0 background, k where the image's k-th detection (its k-th
    row in detections.csv, counting from 1) covers the pixel. Where masks overlap, the earlier row (the higher
    score) wins."""
    if masks.ndim != 3:
        raise ValueError(f"need (N, H, W) masks, got shape {masks.shape}")
    if masks.shape[0] > MAX_INSTANCES:
        raise ValueError(f"{masks.shape[0]} masks do not fit a 16-bit label map (at most {MAX_INSTANCES})")
    labels = np.zeros(masks.shape[1:], dtype=np.uint16)
    for index in range(masks.shape[0] - 1, -1, -1):
        labels[masks[index]] = index + 1
    return labels
