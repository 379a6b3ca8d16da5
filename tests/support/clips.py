"""Short video clips the tests make themselves, with their ground truth: moving-shapes scenes drawn frame by
frame (filled circles, rectangles and triangles, the classes 0, 2 and 7 of datasets/shapes/'s trained
YOLOv7-tiny, gliding in straight lines over a sample photo) and encoded with PyAV. Every object stays whole
inside the frame, so its box is exact in every frame."""
from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Optional, Sequence

import av
import cv2
import numpy as np

from tests.support.paths import SAMPLES

CIRCLE, RECTANGLE, TRIANGLE = 0, 2, 7
COLOURS = ((40, 40, 230), (230, 120, 30), (30, 200, 60), (200, 40, 200))


@dataclass(frozen=True)
class Mover:
    kind: int  # CIRCLE, RECTANGLE or TRIANGLE
    size: tuple[int, int]  # width, height in pixels
    start: tuple[float, float]  # top-left corner in frame 0
    step: tuple[float, float]  # pixels per frame
    colour: tuple[int, int, int]

    def box(self, index: int) -> tuple[int, int, int, int]:
        """x1, y1, x2, y2 in pixels, as drawn (x2, y2 exclusive)."""
        x, y = round(self.start[0] + self.step[0] * index), round(self.start[1] + self.step[1] * index)
        return x, y, x + self.size[0], y + self.size[1]


@dataclass(frozen=True)
class Scene:
    width: int
    height: int
    frames: int
    movers: tuple[Mover, ...]
    background: Optional[np.ndarray]  # BGR, width x height; None: mid grey

    def image(self, index: int) -> np.ndarray:
        image = (self.background.copy() if self.background is not None
                 else np.full((self.height, self.width, 3), 128, np.uint8))
        for mover in self.movers:
            x1, y1, x2, y2 = mover.box(index)
            if mover.kind == RECTANGLE:
                cv2.rectangle(image, (x1, y1), (x2 - 1, y2 - 1), mover.colour, thickness=-1)
            elif mover.kind == CIRCLE:
                cv2.ellipse(image, (((x1 + x2 - 1) / 2, (y1 + y2 - 1) / 2), (x2 - x1 - 1, y2 - y1 - 1), 0),
                            mover.colour, thickness=-1)
            else:
                points = np.array([((x1 + x2 - 1) // 2, y1), (x1, y2 - 1), (x2 - 1, y2 - 1)], np.int32)
                cv2.fillPoly(image, [points], mover.colour)
        return image

    def boxes(self, index: int) -> list[tuple[int, int, int, int, int]]:
        """(class, x1, y1, x2, y2) of every object in frame `index`."""
        return [(mover.kind, *mover.box(index)) for mover in self.movers]


def moving_shapes(width: int = 320, height: int = 240, frames: int = 15, seed: int = 0, objects: int = 3,
                  photo: Optional[str] = "dog.jpg") -> Scene:
    """A scene of `objects` shapes crossing the frame in straight lines, each whole in every frame."""
    rng = np.random.default_rng(seed)
    movers = []
    for number in range(objects):
        side = int(min(width, height) * rng.uniform(0.15, 0.25))
        size = (side, int(side * rng.uniform(0.8, 1.2)))
        start = (rng.uniform(0, width - size[0]), rng.uniform(0, height - size[1]))
        end = (rng.uniform(0, width - size[0]), rng.uniform(0, height - size[1]))
        step = ((end[0] - start[0]) / max(frames - 1, 1), (end[1] - start[1]) / max(frames - 1, 1))
        movers.append(Mover((CIRCLE, RECTANGLE, TRIANGLE)[number % 3], size, start, step,
                            COLOURS[number % len(COLOURS)]))
    background = None
    if photo is not None:
        background = cv2.resize(cv2.imread(str(SAMPLES / photo)), (width, height), interpolation=cv2.INTER_AREA)
    return Scene(width, height, frames, tuple(movers), background)


def write_clip(path: Path, scene: Scene, fps: int = 15, codec: str = "libx264",
               timestamps_s: Optional[Sequence[float]] = None, options: Optional[dict] = None) -> Path:
    """The scene encoded to `path` (the container from the suffix). `timestamps_s` gives each frame its own
    time (a variable frame rate); otherwise frame i is at i / fps."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height = scene.width, scene.height
        stream.pix_fmt = "yuvj420p" if codec == "mjpeg" else "yuv420p"
        stream.options = {"preset": "ultrafast"} if codec == "libx264" and options is None else (options or {})
        if timestamps_s is not None:  # milliseconds in the encoder too, or it rounds the times to 1 / fps
            stream.time_base = stream.codec_context.time_base = Fraction(1, 1000)
        for index in range(scene.frames):
            frame = av.VideoFrame.from_ndarray(scene.image(index), format="bgr24")
            if timestamps_s is not None:
                frame.pts, frame.time_base = round(timestamps_s[index] * 1000), Fraction(1, 1000)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def write_yolo_labels(folder: Path, video: str, scene: Scene) -> Path:
    """One `<folder>/<video without suffix>/<frame:06d>.txt` per frame: the layout datasets/labels.py reads."""
    target = folder / Path(video).with_suffix("")
    target.mkdir(parents=True, exist_ok=True)
    for index in range(scene.frames):
        lines = [f"{cls} {(x1 + x2) / 2 / scene.width:.6f} {(y1 + y2) / 2 / scene.height:.6f} "
                 f"{(x2 - x1) / scene.width:.6f} {(y2 - y1) / scene.height:.6f}"
                 for cls, x1, y1, x2, y2 in scene.boxes(index)]
        (target / f"{index:06d}.txt").write_text("\n".join(lines) + "\n")
    return folder


def write_coco_video(path: Path, videos: dict[str, Scene], first_frame_id: int = 0) -> Path:
    """COCO json in its video extension: `videos`, `images` with `video_id` and `frame_id`, annotations."""
    document: dict = {"videos": [], "images": [], "annotations": [],
                      "categories": [{"id": cls, "name": str(cls)} for cls in (CIRCLE, RECTANGLE, TRIANGLE)]}
    for video_id, (name, scene) in enumerate(videos.items(), start=1):
        document["videos"].append({"id": video_id, "file_name": name, "width": scene.width, "height": scene.height})
        for index in range(scene.frames):
            image_id = len(document["images"]) + 1
            document["images"].append({"id": image_id, "video_id": video_id, "frame_id": index + first_frame_id,
                                       "width": scene.width, "height": scene.height})
            for cls, x1, y1, x2, y2 in scene.boxes(index):
                document["annotations"].append({"id": len(document["annotations"]) + 1, "image_id": image_id,
                                                "category_id": cls, "bbox": [x1, y1, x2 - x1, y2 - y1],
                                                "area": (x2 - x1) * (y2 - y1), "iscrowd": 0})
    path.write_text(json.dumps(document))
    return path


def scramble_packets(path: Path, target: Path, packets: Sequence[int]) -> Path:
    """A copy of the clip whose video packets `packets` (by order in the file) carry scrambled bytes of the same
    length: the container stays whole, the decoder refuses those packets."""
    with av.open(str(path)) as container:
        payloads = [bytes(packet) for packet in container.demux(video=0) if packet.size]
    data = bytearray(path.read_bytes())
    for number in packets:
        at = data.find(payloads[number])
        data[at:at + len(payloads[number])] = bytes((byte * 7 + 13) & 0xFF for byte in payloads[number])
    target.write_bytes(bytes(data))
    return target


def write_hls(folder: Path, scene: Scene, fps: int = 15, segment_s: float = 0.5) -> Path:
    """The scene as an HLS VOD playlist (`live.m3u8`, H.264 in MPEG-TS segments) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    playlist = folder / "live.m3u8"
    with av.open(str(playlist), "w", format="hls",
                 options={"hls_time": str(segment_s), "hls_playlist_type": "vod"}) as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = scene.width, scene.height, "yuv420p"
        stream.options = {"preset": "ultrafast", "g": str(max(1, round(fps * segment_s)))}
        for index in range(scene.frames):
            for packet in stream.encode(av.VideoFrame.from_ndarray(scene.image(index), format="bgr24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return playlist
