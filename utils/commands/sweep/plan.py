"""What a sweep runs: `--sweep KEY=V1,V2,...` arguments parsed and expanded into their cartesian product,
each point a list of `--set KEY=V` overrides with a readable, filesystem-safe name. `node` is the one key that is
not a config key: the machine(s) a launcher runs the point on. Pure: nothing is run here.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from utils.core.errors import UsageError

# Keys the sweep sets itself for every point: where its run directory goes.
RESERVED_KEYS = ("run.id", "run.output_dir")
# Not a config key: which machine runs the point (a Ray node id or node label), read by the launcher.
PLACEMENT_KEY = "node"
NAME_LIMIT = 200  # well under the 255 bytes most filesystems allow for a name
# Every run is a process of seconds to minutes: 10,000 of them is days of machine time, and more is a typo in a
# value list (found before anything is expanded, validated or written).
MAX_RUNS = 10_000
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+\-]+")


class SweepError(UsageError):
    """A mistake in the --sweep arguments; the message names the argument and how to fix it."""


@dataclass(frozen=True)
class Axis:
    key: str
    values: tuple[str, ...]  # raw text, parsed as YAML by --set like any override


@dataclass(frozen=True)
class Point:
    name: str
    assignments: tuple[tuple[str, str], ...]  # (key, raw value) in the order of the --sweep arguments

    @property
    def overrides(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.assignments if key != PLACEMENT_KEY]

    @property
    def node(self) -> str | None:
        return self.values.get(PLACEMENT_KEY)

    @property
    def values(self) -> dict[str, str]:
        return dict(self.assignments)


def split_values(text: str) -> list[str]:
    """Split on the commas outside brackets and quotes, so `[0,2],[1]` is two values."""
    values, current, depth, quote = [], [], 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 0:
            values.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    values.append("".join(current).strip())
    return values


def parse_axis(argument: str) -> Axis:
    key, sep, raw = argument.partition("=")
    key = key.strip()
    example = "e.g. --sweep dataset.batch_size=1,2,4"
    if not sep or not key or not raw.strip():
        raise SweepError(f"--sweep {argument!r}: expected KEY=V1,V2,... ({example})")
    if key in RESERVED_KEYS:
        raise SweepError(f"--sweep {argument!r}: {key} is set by the sweep for each point (its run directory "
                         "goes under <run.output_dir>/<run.id>/<point>/); choose the sweep's own id with --set "
                         f"run.id=NAME and sweep other keys")
    values = split_values(raw)
    if any(not value for value in values):
        raise SweepError(f"--sweep {argument!r}: an empty value between commas; write each value once ({example})")
    if len(set(values)) != len(values):
        repeated = sorted({value for value in values if values.count(value) > 1})
        raise SweepError(f"--sweep {argument!r}: the value(s) {', '.join(repeated)} appear more than once; list "
                         "each value once")
    return Axis(key, tuple(values))


def _check_size(values_per_axis: list[int], rounds: int) -> None:
    runs = rounds
    for count in values_per_axis:
        runs *= count
    if runs > MAX_RUNS:
        product = " x ".join(str(count) for count in values_per_axis) + (f" x {rounds} rounds" if rounds > 1 else "")
        raise SweepError(f"the sweep would start {runs:,} runs ({product}), more than {MAX_RUNS:,}; give fewer "
                         "values (each --sweep value is one more run per combination of the others) or fewer rounds")


def safe_name(assignments: tuple[tuple[str, str], ...]) -> str:
    text = ",".join(f"{key}={value}" for key, value in assignments)
    return _UNSAFE.sub("_", text)[:NAME_LIMIT]


def expand(arguments: list[str]) -> tuple[list[Axis], list[Point]]:
    """The axes in argument order and every point of their product (the last axis varies fastest)."""
    axes = [parse_axis(argument) for argument in arguments]
    keys = [axis.key for axis in axes]
    if len(set(keys)) != len(keys):
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        raise SweepError(f"--sweep names {', '.join(repeated)} more than once; give all of a key's values in one "
                         "--sweep KEY=V1,V2,...")
    _check_size([len(axis.values) for axis in axes], 1)
    points, taken = [], set()
    for combination in itertools.product(*(axis.values for axis in axes)):
        assignments = tuple(zip(keys, combination))
        name = safe_name(assignments)
        # Values that differ only in characters a file name cannot hold get a counter to stay apart.
        unique, counter = name, 2
        while unique in taken:
            unique, counter = f"{name}-{counter}", counter + 1
        taken.add(unique)
        points.append(Point(unique, assignments))
    return axes, points


def round_order(points: list[Point], rounds: int) -> list[tuple[Point, int]]:
    """Each point once per round (rounds numbered from 1), every other round in reverse order (A B, B A, A B):
    points that run next to each other in time share the machine's speed, and reversing cancels a steady drift
    between the first point and the last."""
    if rounds < 1:
        raise SweepError(f"--rounds {rounds}: give 1 or more (each round runs every point once)")
    _check_size([len(points)], rounds)
    order: list[tuple[Point, int]] = []
    for number in range(1, rounds + 1):
        order += [(point, number) for point in (points if number % 2 else points[::-1])]
    return order


def round_name(point: Point, number: int, rounds: int) -> str:
    """The run directory (and run.id) of a point's round: the point's own name when there is one round."""
    return point.name if rounds == 1 else f"{point.name},round={number}"
