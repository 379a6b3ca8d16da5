"""A folder of images read lazily, in a stable order, as 3-channel 8-bit BGR arrays."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Iterator, Optional, Sequence

import cv2
import numpy as np
from torch.utils.data import DataLoader, Dataset

from datasets.dataset_root import DatasetError, check_dataset_root
from datasets.image_header import read_header
from datasets.kinds import IMAGES
from datasets.size_probe import PROBE_BYTES, stored_size
from utils.core.bounded_text import LIMIT, clipped

BUNDLED_SAMPLES = Path(__file__).resolve().parent / "samples"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
# Keeps 16-bit and grayscale as IMREAD_UNCHANGED does and drops alpha, but unlike IMREAD_UNCHANGED applies the
# EXIF orientation, so a photo comes out upright as viewers show it. Measured on the sample photos: no slower
# than IMREAD_UNCHANGED for upright files, and as fast as decoding unchanged and rotating by hand otherwise.
DECODE_FLAGS = cv2.IMREAD_ANYDEPTH | cv2.IMREAD_ANYCOLOR


@dataclass
class LoadedImage:
    """What every source yields: an image file, or one frame of a video file or a stream (datasets/sources/)."""

    path: str  # the image file, the video file or the stream's URL
    image: Optional[np.ndarray]  # BGR uint8, upright; None when it could not be had
    error: Optional[str] = None  # why not
    frame: Optional[int] = None  # a video frame's index in its source, from 0; None for a still image
    pts_s: Optional[float] = None  # a video frame's timestamp (pts, seconds) as its source gives it
    arrival_s: Optional[float] = None  # a stream frame's arrival on time.monotonic(); None where nothing arrives


def find_images(root: str | Path, limit: int | None = None) -> list[Path]:
    root = check_dataset_root(root)
    shown_root = clipped(str(root), LIMIT)
    found = sorted((p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file()),
                   key=lambda p: p.relative_to(root).as_posix())
    if not found:
        raise DatasetError(f"dataset.path {shown_root} holds no images ({', '.join(IMAGE_SUFFIXES)}, searched "
                           "recursively)")
    return found[:limit] if limit else found


def to_bgr8(image: np.ndarray) -> np.ndarray:
    """Grayscale, 16-bit and float images become 3-channel 8-bit BGR (DECODE_FLAGS already dropped alpha)."""
    if image.dtype == np.uint16:
        image = (image // 257).astype(np.uint8)
    elif image.dtype in (np.float32, np.float64):
        image = (np.clip(image, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    elif image.dtype != np.uint8:
        raise ValueError(f"unsupported pixel type {image.dtype}")
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if image.shape[2] == 3:
        return image
    raise ValueError(f"unsupported channel count {image.shape[2]}")


def too_many_pixels(path: Path, max_pixels: Optional[int], data: Optional[memoryview] = None) -> Optional[str]:
    """Why the image is too large to decode, judged before decoding: from its header (Pillow), or where
    Pillow cannot parse it from a probe of the size fields; None when it may be decoded. An image whose size
    neither can tell is refused while a limit is set, since only decoding it would tell."""
    if max_pixels is None:
        return None
    header = read_header(data if data is not None else path)
    head = data[:PROBE_BYTES] if data is not None else _head(path)
    if header is not None:
        width, height, how = header.width, header.height, "checked from the header"
    elif (probed := stored_size(bytes(head))) is not None:
        (width, height), how = probed, "read from the file's size fields"
    elif not cv2.haveImageReader(str(path)):
        return None  # no decoder takes it: the decoder says so, having decoded nothing
    else:
        return ("not a decodable image as far as its header goes: its size cannot be read from its header "
                f"(damaged, or a format whose header is not probed), so dataset.max_pixels {max_pixels:,} cannot be "
                "checked before decoding it; set dataset.max_pixels to null to let the decoder try")
    if width * height <= max_pixels:
        return None
    return (f"{width}x{height} is {width * height:,} pixels, above dataset.max_pixels {max_pixels:,} ({how}, not "
            "decoded); raise dataset.max_pixels, or set it to null to lift the limit")


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as stream:
            return stream.read(PROBE_BYTES)
    except OSError:
        return b""


def decode_image(path: Path, max_pixels: Optional[int] = None) -> LoadedImage:
    """The image, or why it cannot be used: a failure of one file is a reason, never an exception. Every
    decode of the run's images (timed passes, warm-up, accuracy, calibration, LoadGen) comes through here, so
    `max_pixels` is applied before any decoder sees the pixels."""
    try:
        data = np.fromfile(path, dtype=np.uint8)
    except OSError as exc:
        return LoadedImage(str(path), None, f"cannot read file: {exc.strerror or exc}")
    if data.size == 0:
        return LoadedImage(str(path), None, "empty file")
    refusal = too_many_pixels(path, max_pixels, memoryview(data))
    if refusal is not None:
        return LoadedImage(str(path), None, refusal)
    try:
        image = cv2.imdecode(data, DECODE_FLAGS)
        if image is None or image.size == 0:
            return LoadedImage(str(path), None, "not a decodable image (corrupt or unsupported format)")
        return LoadedImage(str(path), to_bgr8(image))
    except ValueError as exc:
        return LoadedImage(str(path), None, str(exc))
    except cv2.error as exc:
        return LoadedImage(str(path), None, decoder_refusal(exc))
    except MemoryError:
        return LoadedImage(str(path), None, "not enough memory to decode it")


def decoder_refusal(error: cv2.error) -> str:
    """OpenCV's exception as a reason: its assertion text is the last line worth keeping."""
    text = str(error).strip()
    if "CV_IO_MAX_IMAGE_PIXELS" in text:
        return ("OpenCV refuses to decode images above 2^30 pixels (CV_IO_MAX_IMAGE_PIXELS), whatever "
                "dataset.max_pixels says; the environment variable OPENCV_IO_MAX_IMAGE_PIXELS raises its limit")
    detail = text.rsplit("error: ", 1)[-1]
    return f"the decoder failed: {detail[:200]}"


class ImageFolder(Dataset):
    def __init__(self, paths: list[Path], max_pixels: Optional[int] = None):
        self.paths = paths
        self.max_pixels = max_pixels

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> LoadedImage:
        return decode_image(self.paths[index], self.max_pixels)


def _keep_list(batch: list[LoadedImage]) -> list[LoadedImage]:
    return batch


def image_loader(paths: list[Path], batch_size: int, workers: int, max_pixels: Optional[int] = None) -> DataLoader:
    """Images stay arrays of their own sizes; batching into a tensor is the pipeline's job.

    Workers persist across passes: forking a fresh worker from a process holding the model at the start of
    every pass would make each pass's first batch slower than the rest.
    """
    return DataLoader(ImageFolder(paths, max_pixels), batch_size=batch_size, shuffle=False, num_workers=workers,
                      collate_fn=_keep_list, persistent_workers=workers > 0)


@dataclass(frozen=True)
class DatasetBatches:
    """The files cut into batches as image_loader cuts them, any one batch decoded on demand: for a pass that
    picks its batches (the warm-up of one batch per input shape), for LoadGen's streams and for the checks, which
    read the files in the main thread (datasets/item_batches.py ItemBatches)."""

    paths: Sequence[Path]
    batch_size: int
    max_pixels: Optional[int] = None
    kind: ClassVar[str] = IMAGES

    @property
    def items(self) -> Sequence[Path]:
        return self.paths

    def __len__(self) -> int:
        return -(-len(self.paths) // self.batch_size)

    def __iter__(self) -> Iterator[list[LoadedImage]]:
        for index in range(len(self)):
            yield self.load(index)

    def load(self, index: int) -> list[LoadedImage]:
        start = index * self.batch_size
        return [decode_image(path, self.max_pixels) for path in self.paths[start:start + self.batch_size]]

    def at(self, indices: Sequence[int]) -> Iterator[list[LoadedImage]]:
        return map(self.load, indices)

    def decode(self, positions: Sequence[int]) -> list[LoadedImage]:
        return [decode_image(self.paths[position], self.max_pixels) for position in positions]

    def of(self, items: Sequence[Path], batch_size: Optional[int] = None) -> "DatasetBatches":
        return replace(self, paths=list(items), batch_size=batch_size or self.batch_size)
