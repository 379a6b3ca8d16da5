"""The ranking of accuracy-aware int8 (int8_repair.py): what each quantized operation, or block of them, wins
back when it alone is fed float. Every evaluation compiles a model, which is where the search's time goes, so
a large graph is ranked by blocks first (by runs of consecutive blocks where there are more blocks than
evaluations) and split down its operations' paths while the evaluations last."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from tqdm import tqdm

from pipelines.runtimes.int8_contract import AccuracyControl, QuantizedGraph


@dataclass(frozen=True)
class Unit:
    """What is reverted at once: one operation, or a block of them (the operations under one top-level name,
    /model.23/...), with what reverting it alone wins back."""

    label: str
    names: tuple[str, ...]
    cost: float = 0.0


def block_of(name: str, depth: int = 1) -> str:
    """The block an operation's name puts it in, `depth` levels down its path: /model.23/cv2.0/Conv is in
    /model.23, then /model.23/cv2.0; the name itself where its path is no deeper (or it has none)."""
    parts = name.split("/")
    return "/".join(parts[:depth + 1]) if name.startswith("/") and len(parts) > depth + 1 else name


def children(unit: Unit, depth: int) -> tuple[list[tuple[str, list[str]]], int]:
    """The unit split one level down its operations' paths (deeper while that leaves it whole), and the depth
    it was split at; its operations alone where no level splits it."""
    while True:
        groups: dict[str, list[str]] = {}
        for name in unit.names:
            groups.setdefault(block_of(name, depth), []).append(name)
        if len(groups) > 1 or all(label == names[0] for label, names in groups.items()):
            return list(groups.items()), depth
        depth += 1


def ranked_units(graph: QuantizedGraph, control: AccuracyControl, base: float, reverted: Sequence[str] = (),
                 max_evaluations: int = 80, progress: bool = True) -> list[Unit]:
    """Units, most costly first (then the smaller, then graph order: the same ranking on every run). Each
    operation alone where there are at most `max_evaluations`; otherwise top-level blocks first (runs of them
    where the blocks alone are more than the cap), then the costliest unit split one level down its paths, and
    so on while the evaluations last. A block stays a unit beside its parts: its cost may lie in operations
    that only win back together (a decode's Concat and the operations feeding it). Every evaluation compiles a
    model, which is where the search's time goes. `reverted`: operations already fed float, on top of which the
    others are ranked (`base` is that model's drop)."""
    already = set(reverted)
    names = [name for name in graph.operations() if name not in already]
    order = {name: index for index, name in enumerate(names)}
    bar = tqdm(total=min(len(names), max_evaluations), desc="int8: ranking operations", unit="eval",
               disable=None if progress else True, leave=False)
    evaluations = 0  # counted apart from the bar: a disabled bar (no terminal) counts nothing

    def cost_of(label: str, members: Sequence[str]) -> Unit:
        nonlocal evaluations
        drop = control.drop(graph.forward(graph.reverted([*reverted, *members])), control.ranking_images)
        evaluations += 1
        bar.update(1)
        return Unit(label, tuple(members), base - drop if drop is not None else 0.0)

    split: set[str] = set()
    with bar:
        if len(names) <= max_evaluations:
            units = [cost_of(name, [name]) for name in names]
        else:
            units = refined_units(names, cost_of, lambda: max_evaluations - evaluations, order, split)
    # A split block's parts come first (together they are the block); the block, before the parts that win
    # nothing alone, for what its parts only win together.
    return sorted(units, key=lambda unit: (1 if unit.label in split else 0 if unit.cost > 0 else 2, -unit.cost,
                                           len(unit.names), order[unit.names[0]]))


def runs_of_blocks(blocks: Sequence[tuple[str, list[str]]], count: int) -> list[tuple[str, list[str]]]:
    """`blocks` in graph order cut into `count` runs of consecutive blocks, as even as whole blocks allow, each
    labelled by its first and last block (`/model.0../model.9`): a graph with more blocks than the evaluations
    allow is ranked by runs first, and a run split into its blocks while evaluations remain."""
    runs = []
    for index in range(count):
        part = blocks[index * len(blocks) // count:(index + 1) * len(blocks) // count]
        if part:
            label = part[0][0] if len(part) == 1 else f"{part[0][0]}..{part[-1][0]}"
            runs.append((label, [name for _, members in part for name in members]))
    return runs


def refined_units(names: Sequence[str], cost_of: Callable[[str, Sequence[str]], Unit], left: Callable[[], int],
                  order: dict[str, int], split: set[str]) -> list[Unit]:
    """Top-level blocks, then the costliest unit split one level down, while `left()` evaluations remain;
    `split` gathers the blocks whose parts were evaluated."""
    top, depth = children(Unit("", tuple(names)), 1)
    if len(top) > left():
        top, depth = runs_of_blocks(top, max(1, left() // 2)), 0  # half left to split the costliest runs
    units = [cost_of(label, members) for label, members in top]
    depths = {unit.label: depth for unit in units}
    tried: set[str] = set()
    while True:
        candidates = [unit for unit in units if unit.cost > 0 and len(unit.names) > 1 and unit.label not in tried]
        if not candidates:
            return units
        costliest = min(candidates, key=lambda unit: (-unit.cost, len(unit.names), order[unit.names[0]]))
        parts, level = children(costliest, depths[costliest.label] + 1)
        tried.add(costliest.label)
        if len(parts) > left():
            continue
        split.add(costliest.label)
        for label, members in parts:
            if label not in depths:
                units.append(cost_of(label, members))
                depths[label] = level
