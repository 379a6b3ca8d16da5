"""The short clip detbench ships for its camera config (`datasets/clips/samples.mp4`): a slow zoom over each of
the six sample photos (datasets/samples/, MIT) in turn, H.264 at 1280x720 and 15 fps with no B-frames, as a
camera would film them. Regenerate it with `.venv/bin/python -m datasets.sample_clip` (x264 with one thread: the
same bytes for the same x264 build)."""
from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np

from datasets.image_folder import BUNDLED_SAMPLES, decode_image, find_images

SAMPLES_CLIP = Path(__file__).resolve().parent / "clips" / "samples.mp4"
ZOOM = 0.25  # each photo's view narrows by this share of its side while it is shown


def _view(photo: np.ndarray, width: int, height: int, progress: float) -> np.ndarray:
    """The photo cropped to the frame's aspect ratio, zoomed in by `progress` of ZOOM, and scaled to the frame."""
    rows, cols = photo.shape[:2]
    crop_w = min(cols, rows * width / height) * (1 - ZOOM * progress)
    crop_h = crop_w * height / width
    x, y = (cols - crop_w) / 2, (rows - crop_h) / 2
    scale = width / crop_w
    move = np.array([[scale, 0, -x * scale], [0, scale, -y * scale]], dtype=np.float64)
    return cv2.warpAffine(photo, move, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def make_samples_clip(target: Path, width: int = 1280, height: int = 720, fps: int = 15,
                      seconds_per_photo: float = 2 / 3) -> Path:
    photos = [decode_image(path).image for path in find_images(BUNDLED_SAMPLES)]
    per_photo = max(1, round(fps * seconds_per_photo))
    target.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(target), "w", options={"movflags": "+faststart"}) as container:
        stream = container.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        # No B-frames, as cameras encode: a decoder holding frames back to reorder them would add 133 ms at 15 fps
        # to every frame's latency from its arrival, a delay no camera has.
        stream.options = {"preset": "medium", "crf": "30", "threads": "1", "g": str(fps), "bf": "0"}
        for photo in photos:
            for step in range(per_photo):
                frame = av.VideoFrame.from_ndarray(_view(photo, width, height, step / per_photo), format="bgr24")
                for packet in stream.encode(frame):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=SAMPLES_CLIP)
    make_samples_clip(parser.parse_args().output)


if __name__ == "__main__":
    main()
