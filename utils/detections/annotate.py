"""Drawing detections onto an image copy, with a visible warning when the weights are random."""
from __future__ import annotations

import colorsys

import cv2
import numpy as np


def class_color(class_id: int) -> tuple[int, int, int]:
    """A stable, well-separated BGR colour per class (golden-ratio hue steps)."""
    hue = (class_id * 0.618033988749895) % 1.0
    r, g, b = colorsys.hsv_to_rgb(hue, 0.85, 0.95)
    return int(b * 255), int(g * 255), int(r * 255)


MASK_OPACITY = 0.45


def draw_detections(image: np.ndarray, detections: np.ndarray, names: list[str], note: str | None = None,
                    masks: np.ndarray | None = None) -> np.ndarray:
    """detections: (n, 6) rows of x1, y1, x2, y2, score, class in the image's pixels; masks: (n, H, W) booleans
    of the same rows, drawn translucent in each class's colour under the boxes."""
    canvas = image.copy()
    if masks is not None and len(masks):
        painted = canvas.copy()
        for mask, cls in zip(masks[::-1], detections[::-1, 5]):  # the highest score painted last, on top
            painted[mask] = class_color(int(cls))
        canvas = cv2.addWeighted(painted, MASK_OPACITY, canvas, 1.0 - MASK_OPACITY, 0.0)
    scale = max(canvas.shape[:2]) / 640.0
    thickness = max(1, round(2 * scale))
    font_scale = max(0.4, 0.5 * scale)
    for x1, y1, x2, y2, score, cls in detections:
        cls = int(cls)
        color = class_color(cls)
        name = names[cls] if 0 <= cls < len(names) else str(cls)
        top_left, bottom_right = (int(round(x1)), int(round(y1))), (int(round(x2)), int(round(y2)))
        cv2.rectangle(canvas, top_left, bottom_right, color, thickness, cv2.LINE_AA)
        label = f"{name} {score:.2f}"
        (tw, th), baseline = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, font_scale, 1)
        label_top = max(top_left[1] - th - baseline - 2, 0)
        cv2.rectangle(canvas, (top_left[0], label_top), (top_left[0] + tw + 2, label_top + th + baseline + 2), color,
                      cv2.FILLED)
        cv2.putText(canvas, label, (top_left[0] + 1, label_top + th + 1), cv2.FONT_HERSHEY_SIMPLEX, font_scale,
                    (0, 0, 0), 1, cv2.LINE_AA)
    if note:
        return with_banner(canvas, note, font_scale)
    return canvas


BANNER_BGR = (0, 0, 200)


def with_banner(image: np.ndarray, text: str, font_scale: float) -> np.ndarray:
    """A red strip with the note added above the image, so that no pixel or label of the photo is hidden;
    the text shrinks to fit narrow images."""
    width = image.shape[1]
    (tw, th), baseline = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, font_scale, 1)
    if tw + 8 > width:
        font_scale *= (width - 8) / (tw + 8)
        (tw, th), baseline = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, font_scale, 1)
    height = th + baseline + 8
    strip = np.empty((height, width, 3), dtype=image.dtype)
    strip[:] = BANNER_BGR
    cv2.putText(strip, text, (4, th + 4), cv2.FONT_HERSHEY_SIMPLEX, font_scale, (255, 255, 255), 1, cv2.LINE_AA)
    return np.vstack((strip, image))
