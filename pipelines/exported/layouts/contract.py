"""What every output layout module states (one module per layout in this folder, found by the registry in
__init__.py), and the reading of a file it returns.

A layout module has:
- `SUMMARY`: its row of docs/models.md's table: (who exports it, output, boxes, what follows, how it is told apart);
- `RECIPE`: the author's preprocessing (recipe.Recipe); optionally `RECIPE_OF`, the exporter whose predict it is,
  as its metadata's `author` names it (Ultralytics), so a run can say the recipe is the exporter's;
- `NMS`: whether NMS follows the graph (True) or its rows are one per object already (False); optionally
  `AGNOSTIC = True` where the author's NMS is one over every class at once (YOLOX's demo), and `DEPLOYED`, the
  author's predict settings (conf_thres, iou_thres) where not Ultralytics';
- `BOXES`: "input" (boxes in the network input's pixels, mapped back by the recipe's resize) or "original"
  (the graph already maps them to each original image, from an extra input); optionally `CLIP = False` where
  the author's predict leaves boxes beyond the image as they are (they are clipped to it otherwise);
- `read(file) -> Reading | Misfit`: its signature: whether the file's inputs, outputs and metadata are this
  layout's, how many classes, and how sure: the registry takes the one surest reading (an ASSUMED one only when
  no other layout reads the file, and then its decodes are checked); a reading may carry the file's own recipe,
  read from a sidecar its exporter writes, which then replaces RECIPE for that file;
- `raw(outputs, reading, height, width) -> Tensor`: the graph's outputs (a tuple, in the graph's order) as one
  (B, N, 5 + C) tensor of cx, cy, w, h in input pixels, objectness and class scores where NMS follows, else as
  (B, K, 6) rows of x1, y1, x2, y2, score, class (pad rows score -1): the score activation and top-k rule are
  the layout's. Pure: tested against hand-computed boxes. Optionally `MULTI_LABEL = True` where the author's NMS
  runs class by class, so one box stands under every class above the cut. Optionally, where NMS follows,
  `passing(outputs, reading, height, width, conf_thres) -> list[Tensor]`: per image, the rows of raw() whose
  scores can pass the cut, found without building every row (a decode reads them right after the forward, when
  the output is not in this core's cache: reading it once is what saves time); tested equal to raw()'s rows.
  Optionally, where no NMS follows but the author's own suppression depends on the cut (MediaPipe's weighted NMS
  over the boxes above it), `decode(outputs, reading, height, width, conf_thres, iou_thres) -> Tensor`: the
  (B, K, 6) rows after it, while raw() gives every candidate before it. A reading may carry the class names
  where the file names none (BlazeFace's face).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence, Union

from pipelines.exported.inspection import ExportedFile, Tensor
from pipelines.exported.recipe import Recipe

INPUT, ORIGINAL = "input", "original"
# How sure a reading is: the metadata names this very model; the signature or the metadata's flags settle it; the
# shapes fit and nothing else says; the shapes do not rule it out, so it is read only when model.head names it.
NAMED, SIGNED, ASSUMED, POSSIBLE = 2, 1, 0, -1
QUERY_LIMIT = 1000  # more rows than this are anchors (YOLO's thousands), not a DETR's queries (100-300)
# COCO's category ids of its 80 classes in order: DETR-style heads index logits by these ids (91 slots, 0 unused).
COCO_IDS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32,
            33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
            60, 61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90)


@dataclass(frozen=True)
class Reading:
    """A layout's reading of one file."""

    layout: str
    classes: int
    why: str  # what decided it, for the run record
    confidence: int = SIGNED
    roles: Mapping[str, int] = field(default_factory=dict)  # which output holds what ("boxes": 0, ...)
    extra_inputs: Mapping[str, str] = field(default_factory=dict)  # graph input name -> what fills it
    details: Mapping[str, Any] = field(default_factory=dict)  # the layout's own facts (strides, bins, ...)
    class_ids: Optional[Sequence[int]] = None  # output class index -> dataset class id, where not the identity
    recipe: Optional[Recipe] = None  # the file's own preprocessing where a sidecar states it (its why says which)
    names: Optional[Sequence[str]] = None  # class names the layout knows where the file names none (BlazeFace's)
    recipe_from: str = ""  # that sidecar's name, for what the run says of its recipe

    @property
    def assumed(self) -> bool:
        return self.confidence == ASSUMED


@dataclass(frozen=True)
class Misfit:
    """Why a file is not this layout's, in words for a message."""

    reason: str


Answer = Union[Reading, Misfit]


def shapes(tensors: Sequence[Tensor]) -> str:
    return ", ".join(f"{t.name} {list(t.shape)}" for t in tensors)


def ranks(file: ExportedFile) -> list[int]:
    return [len(t.shape) for t in file.outputs]


def fixed(size: Any) -> Optional[int]:
    """A dimension's size where the graph fixes it."""
    return size if isinstance(size, int) and size > 0 else None


def named(file: ExportedFile, *names: str) -> Optional[list[int]]:
    """The outputs' indices by name, every name found, else None."""
    index = {tensor.name: position for position, tensor in enumerate(file.outputs)}
    return [index[name] for name in names] if all(name in index for name in names) else None


def named_as_exported(file: ExportedFile, names: Sequence[str]) -> Optional[list[int]]:
    """As `named`, where an exporter may prefix each name with its graph's (super-gradients writes
    `graph2_num_predictions`)."""
    found = [next((index for index, tensor in enumerate(file.outputs)
                   if tensor.name == name or tensor.name.endswith(f"_{name}")), None) for name in names]
    return None if None in found else found


def names_fit(file: ExportedFile, classes: int) -> bool:
    """Whether the metadata's names (where it has some) count these classes."""
    names = file.names()
    return names is None or len(names) == classes


def input_names(file: ExportedFile) -> list[str]:
    return [tensor.name for tensor in file.inputs]


def only_the_image(file: ExportedFile) -> bool:
    return len(file.inputs) == 1


def anchor_count(height: int, width: int, strides: Sequence[int], per_cell: int = 1) -> int:
    """Cells over every stride's grid of an input (YOLOX, NanoDet: one prediction per cell)."""
    return per_cell * sum(-(-height // stride) * -(-width // stride) for stride in strides)
