"""Ground truth at the dataset's edge: a YOLO label folder or a COCO json, read and validated once at start-up.

`dataset.labels` is recognised by what it is: a folder holds YOLO text files (`images/x.jpg` ->
`labels/x.txt`, one `class cx cy w h` line per object, normalised to the image), a file holds COCO json
(`images`, `annotations` with `bbox` `[x, y, w, h]` in pixels, `categories`). Boxes come out as x1 y1 x2 y2
pixels of the upright image, classes as the model's own label ids (`label_mapping` says how they map).

Video frames (datasets/sources/identity.FrameRef) are labelled alike: in YOLO, frame 42 of `clips/a.mp4` by
`labels/clips/a/000042.txt`; in COCO's video extension, by an `images` entry with `video_id` (an entry of
`videos`, whose `file_name` or `name` is the video's path relative to dataset.path, its file name, or either
without the suffix) and `frame_id` (the frame's index from 0, as detections.csv's `frame`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import numpy as np

from datasets.image_folder import decode_image
from datasets.image_header import read_header
from datasets.coco_frames import frame_entry_indices, is_frame_entry
from datasets.label_checks import LabelError, coverage_warning, no_match, read_json, read_label_text, twice
from datasets.sources.identity import FrameRef
from utils.core.bounded_text import shown

Item = Union[Path, FrameRef]  # an image file, or a frame of a video file

# COCO's category ids of its 80 detection classes, in the order of YOLO's 80 class indices; the 10 ids COCO
# skipped (12, 26, 29, 30, 45, 66, 68, 69, 71, 83) belong to no class. torchvision's R-CNN labels are these ids.
COCO_SKIPPED_IDS = (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)
COCO91_IDS = tuple(i for i in range(1, 91) if i not in COCO_SKIPPED_IDS)
RCNN_BACKGROUND = "__background__"


@dataclass(frozen=True)
class ImageTruth:
    boxes: np.ndarray  # (N, 4) float64 x1 y1 x2 y2 in the upright image's pixels
    labels: np.ndarray  # (N,) int64, the model's label ids
    # (N,) bool: COCO `iscrowd` regions, neither to find nor false positives when hit; None: no crowds
    crowd: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return int(self.labels.shape[0])


@dataclass(frozen=True)
class GroundTruth:
    source: str
    format: str  # "yolo" or "coco"
    mapping: str  # how file classes became model label ids (see label_mapping)
    images: tuple[ImageTruth, ...]  # one per dataset image, in the dataset's order
    without_labels: int  # images with no label file / no entry: no objects, counted as YOLO does
    unused: int = 0  # label files / listed images that name no image of the run

    @property
    def objects(self) -> int:
        return sum(len(image) for image in self.images)

    def coverage_warning(self) -> Optional[str]:
        """A warning when only a few of the run's images have labels."""
        return coverage_warning(self.source, len(self.images) - self.without_labels, len(self.images), self.unused)


def _empty() -> ImageTruth:
    return ImageTruth(np.zeros((0, 4)), np.zeros(0, dtype=np.int64))


def _valid_model_ids(class_names: Sequence[str]) -> set[int]:
    return {i for i, name in enumerate(class_names) if name not in (RCNN_BACKGROUND, "N/A")}


def yolo_index_mapping(class_names: Sequence[str]) -> tuple[str, Callable[[int], Optional[int]]]:
    """YOLO text files hold 80-class indices. A model whose labels are COCO's 91 ids (torchvision's R-CNN,
    `__background__` first) gets index i as COCO91_IDS[i]; any other model takes the index as its label id."""
    if class_names and class_names[0] == RCNN_BACKGROUND:
        return "yolo index i -> COCO category id COCO91_IDS[i] (the model's labels are COCO's 91 ids)", \
            lambda i: COCO91_IDS[i] if 0 <= i < len(COCO91_IDS) else None
    valid = _valid_model_ids(class_names)
    return "class index = model label id", lambda i: i if i in valid else None


def coco_category_mapping(categories: list[dict], class_names: Sequence[str]) -> tuple[str, Callable[[int], Optional[int]]]:
    """A COCO file's category ids are the model's label ids when its names say so or they are unnamed
    classes; a file with COCO's 91 ids and names, read for an 80-class model named as COCO's (YOLO), maps
    id COCO91_IDS[i] to index i."""
    valid = _valid_model_ids(class_names)
    named = {c["id"]: str(c.get("name", "")) for c in categories}
    coco_named = len(class_names) == len(COCO91_IDS) and named and all(
        cid in COCO91_IDS and class_names[COCO91_IDS.index(cid)] == name for cid, name in named.items())
    same_names = named and all(cid in valid and class_names[cid] == name for cid, name in named.items())
    if coco_named and not same_names:
        return "COCO category id COCO91_IDS[i] -> class index i (the file uses COCO's 91 ids)", \
            lambda cid: COCO91_IDS.index(cid) if cid in COCO91_IDS else None
    return "category id = model label id", lambda cid: cid if cid in valid else None


def _upright_size(item: Item, max_pixels: Optional[int]) -> tuple[int, int]:
    if isinstance(item, FrameRef):
        return item.width, item.height
    path = item
    header = read_header(path)
    if header is not None:
        return header.width, header.height
    image = decode_image(path, max_pixels).image
    if image is None:
        return 0, 0  # an undecodable image is skipped by the run; its labels are never used
    return image.shape[1], image.shape[0]


def _yolo_file(path: Path, image: Item, to_model: Callable[[int], Optional[int]], nc: int,
               max_pixels: Optional[int]) -> ImageTruth:
    boxes, labels = [], []
    width, height = None, None
    for number, line in enumerate(read_label_text(path).splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}, line {number}"
        if len(fields) != 5:
            raise LabelError(f"{where}: expected 5 values `class cx cy w h`, got {len(fields)}: {line[:80]!r}")
        try:
            cls = int(fields[0])
            cx, cy, w, h = (float(v) for v in fields[1:])
        except ValueError:
            raise LabelError(f"{where}: `class cx cy w h` must be a whole class id and four numbers, got "
                             f"{line[:80]!r}") from None
        if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in (cx, cy, w, h)) or w <= 0 or h <= 0:
            raise LabelError(f"{where}: cx cy w h must be normalised to the image (0..1, w and h above 0), got "
                             f"{line[:80]!r}")
        label = to_model(cls)
        if label is None:
            raise LabelError(f"{where}: class {cls} is not a class of the model ({nc} classes); fix the label or "
                             "use a model trained on these classes")
        if width is None:
            width, height = _upright_size(image, max_pixels)
        boxes.append(((cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height))
        labels.append(label)
    if not labels:
        return _empty()
    return ImageTruth(np.asarray(boxes, dtype=np.float64), np.asarray(labels, dtype=np.int64))


def _label_name(item: Item, root: Path) -> str:
    """The item's YOLO label file relative to the labels folder, without .txt."""
    if isinstance(item, FrameRef):
        return f"{item.video.relative_to(root).with_suffix('').as_posix()}/{item.label_stem()}"
    return item.relative_to(root).with_suffix("").as_posix()


def _shown_item(item: Item, root: Path) -> str:
    """The item as a no-match message shows it: an image's stem, a frame's label name."""
    return _label_name(item, root) if isinstance(item, FrameRef) else item.stem


def _item_where(item: Item, root: Path) -> str:
    if isinstance(item, FrameRef):
        return f"frame {item.index} of video {item.video.relative_to(root).as_posix()}"
    return f"image {item.relative_to(root).as_posix()}"


def _read_yolo(folder: Path, root: Path, images: Sequence[Item], class_names: Sequence[str],
               max_pixels: Optional[int]) -> GroundTruth:
    mapping, to_model = yolo_index_mapping(class_names)
    label_files = [folder / f"{_label_name(image, root)}.txt" for image in images]
    twice([(label.relative_to(folder).as_posix(), _item_where(image, root))
           for label, image in zip(label_files, images)], "label file", f"dataset.labels {folder}",
          "two images of one name but for the suffix share one label file; rename one of them")
    present = [label.is_file() for label in label_files]
    if not any(present):
        example = next((p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.txt")), None)
        how = ("a video frame's label file is named after the video's path relative to dataset.path without its "
               "suffix, then the frame's index in six digits, e.g. clip/000000.txt" if isinstance(images[0], FrameRef)
               else "a label file is named after the image's path relative to dataset.path, with the suffix .txt")
        raise no_match(str(folder), example, root, _shown_item(images[0], root), how)
    truths = [_yolo_file(label, image, to_model, len(class_names), max_pixels) if found else _empty()
              for label, image, found in zip(label_files, images, present)]
    matched = sum(present)
    unused = max(0, sum(1 for _ in folder.rglob("*.txt")) - matched) if matched < len(images) else 0
    return GroundTruth(str(folder), "yolo", mapping, tuple(truths), len(images) - matched, unused)


def _coco_field(document: dict, key: str, path: Path) -> list:
    value = document.get(key)
    if not isinstance(value, list):
        raise LabelError(f"{path}: a COCO file needs a list `{key}`; this one has "
                         f"{'none' if value is None else type(value).__name__}")
    return value


def _is_id(value: object) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _read_coco(path: Path, root: Path, images: Sequence[Item], class_names: Sequence[str]) -> GroundTruth:
    document = read_json(path)
    if not isinstance(document, dict):
        raise LabelError(f"{path}: a COCO file holds an object with images, annotations and categories")
    entries = _coco_field(document, "images", path)
    annotations = _coco_field(document, "annotations", path)
    categories = _coco_field(document, "categories", path)
    for number, category in enumerate(categories):
        if not isinstance(category, dict) or not _is_id(category.get("id")) or isinstance(category["id"], str):
            raise LabelError(f"{path}: categories[{number}] needs a whole-number `id` (and a `name`)")
    mapping, to_model = coco_category_mapping(categories, class_names)
    stills = [(index, image) for index, image in enumerate(images) if isinstance(image, Path)]
    by_relative = {image.relative_to(root).as_posix(): index for index, image in stills}
    by_name: dict[str, Optional[int]] = {}
    for index, image in stills:
        by_name[image.name] = None if image.name in by_name else index  # a repeated name is ambiguous
    for number, entry in enumerate(entries):
        if not isinstance(entry, dict) or not _is_id(entry.get("id")) or not (
                isinstance(entry.get("file_name"), str) or is_frame_entry(entry)):
            raise LabelError(f"{path}: images[{number}] needs an `id` (a number or text) and a `file_name` (a video "
                             "frame: a `video_id` and a `frame_id`)")
    twice([(entry["id"], f"images[{number}] ({shown(entry.get('file_name', entry.get('frame_id')), 60)})")
           for number, entry in enumerate(entries)], "image id", str(path), "give every image its own id")
    image_entries = [(number, entry) for number, entry in enumerate(entries) if not is_frame_entry(entry)]
    twice([(entry["file_name"].replace("\\", "/"), f"images[{number}] (id {shown(entry['id'], 30)})")
           for number, entry in image_entries], "file_name", str(path), "list every image once")
    index_of = frame_entry_indices(document, entries, path, root, images)
    for _, entry in image_entries:
        name = entry["file_name"].replace("\\", "/")
        index = by_relative.get(name, by_name.get(Path(name).name))
        if index is not None:
            index_of[entry["id"]] = index
    if not index_of:
        first = entries[0] if entries else None
        example = (None if first is None else f"video_id {shown(first['video_id'], 30)} frame_id {first.get('frame_id')}"
                   if is_frame_entry(first) else Path(first["file_name"].replace("\\", "/")).stem)
        how = ("its videos' file_name or name are matched to the videos' paths relative to dataset.path, or to their "
               "file names, with or without the suffix" if isinstance(images[0], FrameRef) else
               "its file_name values are matched to the images' paths relative to dataset.path, or to their file names")
        raise no_match(str(path), example, root, _shown_item(images[0], root), how)
    boxes: list[list] = [[] for _ in images]
    labels: list[list] = [[] for _ in images]
    crowds: list[list] = [[] for _ in images]
    for number, annotation in enumerate(annotations):
        where = f"{path}, annotations[{number}]"
        if not isinstance(annotation, dict):
            raise LabelError(f"{where}: an annotation is an object with image_id, category_id and bbox")
        image_id = annotation.get("image_id")
        index = index_of.get(image_id) if _is_id(image_id) else None
        if index is None:
            continue  # an image outside this run (dataset.limit, or not in the folder)
        bbox = annotation.get("bbox")
        if (not isinstance(bbox, list) or len(bbox) != 4 or not all(_finite(v) for v in bbox) or bbox[2] <= 0
                or bbox[3] <= 0):
            raise LabelError(f"{where}: bbox must be [x, y, w, h] in pixels with w and h above 0, got "
                             f"{str(bbox)[:80]}")
        category = annotation.get("category_id")
        label = to_model(category) if isinstance(category, int) and not isinstance(category, bool) else None
        if label is None:
            raise LabelError(f"{where}: category_id {str(category)[:20]} is not a class of the model "
                             f"({len(class_names)} classes); fix the file or use a model trained on its classes")
        x, y, w, h = bbox
        boxes[index].append((x, y, x + w, y + h))
        labels[index].append(label)
        crowds[index].append(bool(annotation.get("iscrowd")))
    truths = tuple(ImageTruth(np.asarray(b, dtype=np.float64).reshape(-1, 4), np.asarray(l, dtype=np.int64),
                              np.asarray(c, dtype=bool))
                   for b, l, c in zip(boxes, labels, crowds))
    listed = set(index_of.values())
    return GroundTruth(str(path), "coco", mapping, truths, len(images) - len(listed), len(entries) - len(index_of))


def _finite(value: object) -> bool:
    """A finite number a float can hold (a 400-digit int cannot)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def load_ground_truth(labels: str | Path, dataset_root: str | Path, images: Sequence[Item],
                      class_names: Sequence[str], max_pixels: Optional[int] = None) -> GroundTruth:
    """Ground truth for `images` (image files, or video frames, under `dataset_root`), as the model's label ids;
    `max_pixels` bounds the images decoded for their size where the header does not say it."""
    path, root = Path(labels), Path(dataset_root)
    if not path.exists():
        raise LabelError(f"dataset.labels {path} does not exist; point it at a YOLO labels folder or a COCO json "
                         "file, or remove the key")
    if path.is_dir():
        return _read_yolo(path, root, images, class_names, max_pixels)
    return _read_coco(path, root, images, class_names)
