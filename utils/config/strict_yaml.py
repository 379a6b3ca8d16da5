"""YAML for hand-edited configs: safe types only, no key twice in a mapping, no alias bomb.

PyYAML keeps the last of two equal keys, so a second `model:` section silently replaces the first; and an
alias (*name) repeats its anchor's values without copying them, so nine levels of nine aliases in a 700-byte
file stand for 9^9 values that validation and messages would then walk. Both are refused here, while the
document is still a graph of nodes: the expanded size is counted with each shared node counted once.
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import yaml

from utils.core.bounded_text import shown

MAX_VALUES = 10_000  # a config holds a few hundred; an alias bomb, millions
# YAML 1.1 reads a float only with a dot and a signed exponent, so `1e9` and `2.5e3` were text. Numbers as
# people write them: a mantissa (digits, `_` between them, an optional dot) and an exponent of any sign.
_NUMBER_TAG = "tag:detbench,2026:number"
EXPONENT_NUMBER = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$")
_WHOLE_LIMIT = 2**63  # a whole value below this is an int (so `1e9` fits an int key); above, a float
_MERGE_TAG = "tag:yaml.org,2002:merge"
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml parses in C; construction stays PyYAML's


class StrictYamlError(yaml.YAMLError):
    """A document valid YAML accepts and a config must not have; the message names where."""


class StrictLoader(_Base):
    def construct_document(self, node: yaml.Node) -> Any:
        values = expanded_size(node, MAX_VALUES)
        if values is None:
            raise StrictYamlError("an alias (*name) refers to a value that contains it, which has no end; write "
                                  "the values out instead")
        if values > MAX_VALUES:
            raise StrictYamlError(f"the document holds more than {MAX_VALUES:,} values once its aliases (*name) are "
                                  "expanded; a config needs a few hundred: write the values out instead of "
                                  "repeating anchors")
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue  # a non-scalar key is refused by PyYAML itself; merged keys may be overridden
                key = self.construct_object(key_node)
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise StrictYamlError(f"key {shown(key)} appears twice in one mapping, at line {first_line[key]} "
                                          f"and at line {line}; YAML would keep only the second: merge them into "
                                          "one")
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)


def number_value(text: str) -> int | float:
    """`1e9` -> 1000000000 (whole values in exponent notation are ints, so they fit an int key),
    `2.5e-3` -> 0.0025; an exponent too large for a float gives inf, which validation refuses by name."""
    digits = text.replace("_", "")
    value = float(digits)
    exponent = int(re.split("[eE]", digits)[1])
    if abs(exponent) <= 40 and abs(value) < _WHOLE_LIMIT:  # bounded: Decimal never builds a huge int here
        exact = Decimal(digits)
        if exact == exact.to_integral_value():
            return int(exact)
    return value


def _construct_number(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> int | float:
    return number_value(loader.construct_scalar(node))


StrictLoader.add_implicit_resolver(_NUMBER_TAG, EXPONENT_NUMBER, list("-+0123456789."))
for _first in "-+0123456789.":  # ahead of YAML 1.1's float, so `1.0e+9` and `1.0e9` read alike
    _resolvers = StrictLoader.yaml_implicit_resolvers[_first]
    _resolvers.insert(0, _resolvers.pop())
StrictLoader.add_constructor(_NUMBER_TAG, _construct_number)


def expanded_size(root: yaml.Node, bound: int) -> int | None:
    """How many nodes the document stands for with every alias written out, counted up to just above
    `bound`; None when a node contains itself. Each distinct node is visited once."""
    sizes: dict[int, int] = {}
    started: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            sizes[key] = min(bound + 1, 1 + sum(sizes[id(child)] for child in _children(node)))
            continue
        if key in sizes:
            continue
        if key in started:
            return None  # met again before it was done: it is its own ancestor
        started.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def load(text: str) -> Any:
    try:
        return yaml.load(text, Loader=StrictLoader)
    except RecursionError:  # the pure-Python parser, where libyaml is missing, nests by recursion
        raise StrictYamlError("the document nests values too deep to read; a config nests a few levels") from None
