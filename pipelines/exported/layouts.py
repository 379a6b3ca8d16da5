"""The output layouts exported detectors come in, and how a file's layout is told from its outputs and metadata
(light: no torch; decoding.py decodes each layout).

| layout | output | boxes | then |
|---|---|---|---|
| `yolov5` | (B, N, 5 + C) | cx, cy, w, h in input pixels, objectness, class scores | NMS |
| `yolov8` | (B, 4 + C, N) | cx, cy, w, h in input pixels, class scores (no objectness) | NMS |
| `end2end` | (B, K, 6) | x1, y1, x2, y2 in input pixels, score, class | the score cut only |
| `rtdetr` | (B, Q, 4 + C) | cx, cy, w, h normalised to the input, class scores | the score cut only |
| `detr` | (B, Q, 4) and (B, Q, C) | cx, cy, w, h normalised; class logits (sigmoid) | the score cut only |
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from pipelines.exported.inspection import ExportedFile, ExportedFileError

QUERY_LIMIT = 1000  # more rows than this are anchors (YOLO's thousands), not a DETR's queries (100-300)
REFUSED_TASKS = {"segment": "a segmentation export", "pose": "a pose export", "obb": "an oriented-box export",
                 "classify": "a classification export"}


class Layout(str, Enum):
    YOLOV5 = "yolov5"
    YOLOV8 = "yolov8"
    END2END = "end2end"
    RTDETR = "rtdetr"
    DETR = "detr"

    @property
    def suppresses(self) -> bool:
        """Whether NMS follows the network (the others' graphs or heads leave one box per object)."""
        return self in (Layout.YOLOV5, Layout.YOLOV8)

    @property
    def letterboxed(self) -> bool:
        """YOLO exports take a letterboxed square; DETR-style ones the image resized to the input, aspect not kept."""
        return self in (Layout.YOLOV5, Layout.YOLOV8, Layout.END2END)


KNOWN = ", ".join(layout.value for layout in Layout)


@dataclass(frozen=True)
class ReadLayout:
    layout: Layout
    classes: int
    why: str  # what decided it, for the run record
    boxes_output: int = 0  # DETR-style: which output holds the boxes


def _shapes(file: ExportedFile) -> str:
    return ", ".join(f"{t.name} {list(t.shape)}" for t in file.outputs)


def read_layout(file: ExportedFile, head: Optional[str] = None) -> ReadLayout:
    """The file's layout: `head` (model.head) when given, else from the graph's outputs, with the metadata to
    settle what the shapes leave open. Refuses what is not a detector's output, naming what was found."""
    task = str(file.metadata.get("task", "detect"))
    if task in REFUSED_TASKS:
        raise ExportedFileError(f"model.file {file.path} is {REFUSED_TASKS[task]} (its metadata says task: {task}), "
                                f"not a detector's; outputs {_shapes(file)}. Export a detection model")
    image = file.image_input
    if len(file.inputs) > 1:
        raise ExportedFileError(
            f"model.file {file.path} takes {len(file.inputs)} inputs ({', '.join(t.name for t in file.inputs)}); "
            "detbench feeds the image tensor alone. Export the detector with the image as its only input (D-FINE's "
            "own export also takes orig_target_sizes)")
    if len(image.shape) != 4 or image.shape[1] != 3:
        raise ExportedFileError(f"model.file {file.path}: its input {image.name} {list(image.shape)} is not a batch "
                                "of 3-channel images in NCHW order; export it with a (batch, 3, height, width) input")
    outputs = file.outputs
    if any(len(t.shape) == 4 for t in outputs):
        raise ExportedFileError(f"model.file {file.path}: outputs {_shapes(file)} hold a map (mask prototypes or "
                                "heatmaps): a segmentation or pose export, not a detector's. Export a detection model")
    if len(outputs) == 1 and len(outputs[0].shape) == 2:
        raise ExportedFileError(f"model.file {file.path}: output {_shapes(file)} is one score per class per image, "
                                "a classification model's; detbench runs detectors")
    names = file.names()
    if len(outputs) == 2 and all(len(t.shape) == 3 for t in outputs):
        boxes = next((i for i, t in enumerate(outputs) if t.shape[-1] == 4), None)
        if boxes is not None and (head in (None, Layout.DETR.value)):
            classes = outputs[1 - boxes].shape[-1]
            return ReadLayout(Layout.DETR, _classes(classes, file), "two outputs: boxes (B, Q, 4) and class logits",
                              boxes)
    if len(outputs) != 1 or len(outputs[0].shape) != 3:
        raise ExportedFileError(f"model.file {file.path}: outputs {_shapes(file)} match no layout detbench knows "
                                f"({KNOWN}); see docs/models.md")
    _, rows, values = outputs[0].shape
    if head is not None:
        return _as_told(Layout(head), rows, values, file)
    if file.metadata_flag("nms") or file.metadata_flag("end2end"):
        if values != 6:
            raise ExportedFileError(f"model.file {file.path}: its metadata says NMS is inside the graph, but output "
                                    f"{_shapes(file)} is not (B, K, 6) rows; set model.head to one of {KNOWN}")
        return ReadLayout(Layout.END2END, _classes(len(names) if names else 0, file),
                          "metadata: NMS in the graph (nms or end2end), output (B, K, 6)")
    if isinstance(rows, int) and (not isinstance(values, int) or rows < values):
        return ReadLayout(Layout.YOLOV8, _classes(rows - 4, file), "output (B, 4 + C, N): channels before anchors")
    if not isinstance(values, int):
        raise ExportedFileError(f"model.file {file.path}: output {_shapes(file)} has no fixed number of values per "
                                f"row; set model.head to one of {KNOWN}")
    if names is not None:
        if values == 5 + len(names):
            return ReadLayout(Layout.YOLOV5, len(names), f"output (B, N, 5 + C) with the metadata's {len(names)} names")
        if values == 4 + len(names):
            return ReadLayout(Layout.RTDETR, len(names), f"output (B, Q, 4 + C) with the metadata's {len(names)} names")
    if isinstance(rows, int) and rows > QUERY_LIMIT:
        return ReadLayout(Layout.YOLOV5, _classes(values - 5, file),
                          f"output (B, N, 5 + C) assumed: {rows} rows are anchors, not queries")
    raise ExportedFileError(f"model.file {file.path}: output {_shapes(file)} could be more than one layout "
                            f"(yolov5's 5 + C values or rtdetr's 4 + C, end2end's 6); set model.head to one of {KNOWN}")


def _as_told(layout: Layout, rows, values, file: ExportedFile) -> ReadLayout:
    extra = {Layout.YOLOV5: 5, Layout.RTDETR: 4, Layout.END2END: None, Layout.YOLOV8: None, Layout.DETR: None}[layout]
    if layout == Layout.YOLOV8:
        count = rows - 4 if isinstance(rows, int) else -1
    elif layout == Layout.END2END:
        count = len(file.names() or []) if values == 6 else -1
    elif layout == Layout.DETR:
        count = -1
    else:
        count = values - extra if isinstance(values, int) else -1
    if count < 0:
        raise ExportedFileError(f"model.head {layout.value} does not fit model.file {file.path}'s outputs "
                                f"{_shapes(file)}; set model.head to one of {KNOWN}, or leave it out")
    return ReadLayout(layout, _classes(count, file), "model.head")


def _classes(count: int, file: ExportedFile) -> int:
    names = file.names()
    if names is not None and count and len(names) != count:
        raise ExportedFileError(f"model.file {file.path}: its metadata names {len(names)} classes, and its output holds "
                                f"{count}; the metadata is from another model: export it again")
    return count or len(names or [])
