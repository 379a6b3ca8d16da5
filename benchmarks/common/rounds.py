"""The order in which a round runs its sides, so that a shared machine's drift spreads over all of them and no side
always runs first, or always right after another's exit."""
from __future__ import annotations

from typing import Sequence, TypeVar

Side = TypeVar("Side")


def alternated(sides: Sequence[Side], number: int) -> list[Side]:
    """As given in rounds 0, 2, 4, ...; reversed in rounds 1, 3, ..."""
    return list(sides) if number % 2 == 0 else list(reversed(sides))


def rotated(sides: Sequence[Side], number: int) -> list[Side]:
    """Round `number` starts at side number % len(sides); the others follow in their order."""
    shift = number % len(sides)
    return list(sides[shift:]) + list(sides[:shift])
