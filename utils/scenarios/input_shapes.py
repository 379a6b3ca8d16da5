"""Which network input shapes the timed passes will see, known before they run, and which batches warm them up.

The first call of each new input shape is a cold start (oneDNN builds its primitives, ONNX Runtime and
OpenVINO reshape). With rect letterboxing or a short last batch a dataset has several shapes, so a warm-up of
one batch leaves the others to be paid inside the timed passes. Image sizes come from the headers alone; the
family's pipeline says which input shape a batch of those sizes becomes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from datasets.image_folder import decode_image
from datasets.image_header import read_header

Shape = tuple[int, ...]
AUTO = "auto"


def image_sizes(paths: Sequence[Path], max_pixels: Optional[int] = None) -> list[Optional[tuple[int, int]]]:
    """Upright (height, width) of each image, from its header; an image whose header cannot be parsed is
    decoded instead, and one that cannot be decoded or is over `max_pixels` is None (the passes skip it)."""
    sizes: list[Optional[tuple[int, int]]] = []
    for path in paths:
        header = read_header(path)
        if header is not None:
            fits = max_pixels is None or header.pixels <= max_pixels
            sizes.append((header.height, header.width) if fits else None)
            continue
        image = decode_image(Path(path), max_pixels).image
        sizes.append(None if image is None else (int(image.shape[0]), int(image.shape[1])))
    return sizes


def batch_shapes(sizes: Sequence[Optional[tuple[int, int]]], batch_size: int,
                 shape_of: Callable[[Sequence[tuple[int, int]]], Shape]) -> list[Optional[Shape]]:
    """The input shape of each batch as the loader cuts them (skipped images leave a batch smaller); None
    for a batch whose every image is skipped, which runs no stage."""
    shapes: list[Optional[Shape]] = []
    for start in range(0, len(sizes), batch_size):
        kept = [size for size in sizes[start:start + batch_size] if size is not None]
        shapes.append(tuple(shape_of(kept)) if kept else None)
    return shapes


def loadgen_batch_shapes(sizes: Sequence[Optional[tuple[int, int]]], batch_size: int,
                         shape_of: Callable[[Sequence[tuple[int, int]]], Shape]) -> dict[Shape, tuple[int, ...]]:
    """Every input shape a batch under LoadGen can take, each with the image indices of one batch that takes it,
    full batches first. A worker batches 1 to batch_size of whichever samples are queued, in LoadGen's order,
    so the dataset's own batches show only some of these shapes. A batch's shape is set by at most two of its
    images (the tallest and the widest; the extreme aspect ratios for test.py's letterbox), so pairs of images,
    one of them repeated to fill the batch, reach every shape."""
    firsts: dict[Shape, int] = {}  # one image of each single-image shape
    for index, size in enumerate(sizes):
        if size is not None:
            firsts.setdefault(tuple(shape_of([size])), index)
    found: dict[Shape, tuple[int, ...]] = {}
    for count in range(batch_size, 0, -1):
        for first in firsts.values():
            for last in (firsts.values() if count > 1 else (first,)):
                indices = (first,) * (count - 1) + (last,)
                found.setdefault(tuple(shape_of([sizes[index] for index in indices])), indices)
    return found


@dataclass(frozen=True)
class WarmupChoice:
    """The warm-up batches and what they leave cold."""

    mode: str  # "auto" or "batches" (a fixed count of first batches)
    batches: tuple[int, ...]  # batch indices the warm-up runs, in order
    shapes: int  # distinct input shapes of the dataset
    cap: Optional[int]  # the most batches auto may run
    cold: dict[int, Shape] = field(default_factory=dict)  # batch -> shape it is the first timed batch of

    @property
    def warmed_shapes(self) -> int:
        return self.shapes - len(self.cold)


def choose_warmup(shapes: Sequence[Optional[Shape]], warmup: Union[int, str], cap: int) -> WarmupChoice:
    """`auto`: the first batch of each distinct shape, in dataset order, at most `cap` of them. A count:
    the first that many batches, as before. Either way, the first timed batch of a shape no warm-up batch
    ran is cold."""
    if warmup == AUTO:
        firsts: dict[Shape, int] = {}
        for index, shape in enumerate(shapes):
            if shape is not None and shape not in firsts:
                firsts[shape] = index
        batches = tuple(sorted(firsts.values())[:cap])
        mode, bound = AUTO, cap
    else:
        batches = tuple(range(min(int(warmup), len(shapes))))
        mode, bound = "batches", None
    warmed = {shapes[index] for index in batches}
    cold: dict[int, Shape] = {}
    for index, shape in enumerate(shapes):
        if shape is not None and shape not in warmed:
            warmed.add(shape)
            cold[index] = shape
    return WarmupChoice(mode, batches, len({s for s in shapes if s is not None}), bound, cold)


def warmup_document(choice: WarmupChoice, shapes: Sequence[Optional[Shape]]) -> dict:
    """What summary.json `warmup` says before the passes run; the writer adds the cold batches' times."""
    return {
        "mode": choice.mode,
        "max_batches": choice.cap,
        "batches": list(choice.batches),
        "input_shapes": choice.shapes,
        "warmed_shapes": choice.warmed_shapes,
        "shapes": shape_counts(shapes),
        "cold_shapes": [{"batch": index, "shape": list(shape)} for index, shape in choice.cold.items()],
    }


def shape_counts(shapes: Sequence[Optional[Shape]]) -> list[dict]:
    """Each distinct input shape with the batches of one pass that have it, in order of first appearance."""
    counts: dict[Shape, dict] = {}
    for index, shape in enumerate(shapes):
        if shape is not None:
            counts.setdefault(shape, {"shape": list(shape), "first_batch": index, "batches": 0})["batches"] += 1
    return list(counts.values())


def warmup_line(choice: WarmupChoice) -> str:
    """The console's one line about the warm-up, before the passes run."""
    line = (f"Warm-up: {len(choice.batches)} batch(es) covering {choice.warmed_shapes} of {choice.shapes} input "
            f"shape(s)")
    if choice.cold:
        how = (f"benchmark.warmup_max_batches {choice.cap}" if choice.mode == AUTO
               else f"benchmark.warmup {len(choice.batches)}")
        line += (f"; {len(choice.cold)} shape(s) will run cold in timed pass 0 ({how}): those batches are "
                 "reported apart (summary.json warmup.cold_shapes)")
    return line
