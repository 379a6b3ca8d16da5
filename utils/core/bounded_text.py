"""Values echoed in messages, shortened to a bound that says what was cut.

A message that repeats a user's value must stay readable whatever the value: a config can hold a list nested
nine deep that YAML aliases expand to millions of items, and printing it whole is what made a 700-byte file
hang. The work done here is bounded too: reprlib never walks more than a few items per level, and the depth
count stops at MAX_DEPTH and visits each shared object once.
"""
from __future__ import annotations

import reprlib
from typing import Any

LIMIT = 100  # characters of a shown value, about
MAX_DEPTH = 20

_BRIEF = reprlib.Repr()
_BRIEF.maxlevel, _BRIEF.maxlist, _BRIEF.maxtuple, _BRIEF.maxset, _BRIEF.maxdict = 3, 6, 6, 6, 6
_BRIEF.maxstring, _BRIEF.maxother, _BRIEF.maxlong = 40, 40, 40
_CONTAINERS = {list: "list", tuple: "tuple", dict: "mapping", set: "set", frozenset: "set"}


def shown(value: Any, limit: int = LIMIT) -> str:
    """`value` as repr shows it when that is short; otherwise its beginning and what it is, e.g.
    "[[[[...], ...], ...], ...] (a list of 9 items nested 9 deep)"."""
    if isinstance(value, (str, bytes)):
        text = repr(value[: limit + 1])
        if len(value) <= limit and len(text) <= limit + 3:
            return text
        size = f"text of {len(value):,} characters" if isinstance(value, str) else f"{len(value):,} bytes"
        return f"{repr(value[: max(limit - 20, 10)])[:limit]}... ({size})"
    kind = next((name for cls, name in _CONTAINERS.items() if isinstance(value, cls)), None)
    if kind is None:
        text = _BRIEF.repr(value)
        return text if len(text) <= limit else f"{text[:limit]}... (a {type(value).__name__})"
    depth = nesting_depth(value)
    text = _BRIEF.repr(value) if depth <= MAX_DEPTH else f"{'[' if kind == 'list' else '{'}...]"
    small = len(value) <= _BRIEF.maxlist and depth <= _BRIEF.maxlevel and "..." not in text
    if small and len(text) <= limit:
        return text
    nested = f" nested {depth} deep" if depth <= MAX_DEPTH else f" nested more than {MAX_DEPTH} deep"
    items = "item" if len(value) == 1 else "items"
    description = f"a {kind} of {len(value):,} {items}{nested if depth > 1 else ''}"
    return f"{text[:limit]}{'...' if len(text) > limit else ''} ({description})"


def clipped(text: str, limit: int = 2 * LIMIT) -> str:
    """Free text that may quote a user's value (a parser's message, a key path), cut to `limit` characters."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters in all)"


def nesting_depth(value: Any) -> int:
    """1 for a flat container, more per level of containers inside; MAX_DEPTH + 1 for deeper or self-nested
    values. Each object is visited once, however many times aliases repeat it."""
    known: dict[int, int] = {}

    def depth(item: Any, level: int) -> int:
        if not isinstance(item, (list, tuple, dict, set, frozenset)):
            return 0
        if level > MAX_DEPTH:
            return MAX_DEPTH + 1
        key = id(item)
        if key in known:
            return known[key]
        known[key] = MAX_DEPTH + 1  # until it is done: a value inside itself counts as too deep
        children = list(item.values()) + list(item) if isinstance(item, dict) else item
        found = 1 + max((depth(child, level + 1) for child in children), default=0)
        known[key] = min(found, MAX_DEPTH + 1)
        return known[key]

    return depth(value, 1)
