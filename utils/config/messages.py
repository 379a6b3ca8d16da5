"""Readable messages for a config's mistakes: YAML syntax errors with line and column, and pydantic's
validation errors as one line per key that says what to write instead and where the value came from."""
from __future__ import annotations

import re
from typing import Any, Optional

import yaml
from pydantic import BaseModel, ValidationError

from utils.config import strict_yaml
from utils.core.bounded_text import clipped, shown
from utils.core.suggestions import key_hint, value_hint

MAX_LISTED_ERRORS = 20


def yaml_error(error: yaml.YAMLError, text: str) -> str:
    """'<problem> at line L, column C' from a PyYAML error, without PyYAML's '<unicode string>' placeholder."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        message = f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
        if error.context and error.context_mark is not None:
            start = error.context_mark
            message += f" ({error.context} that starts at line {start.line + 1}, column {start.column + 1})"
        return message
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        return f"character {chr(error.character)!r} is not allowed at line {line}, column {column}"
    return str(error)


def _origin(loc: tuple, overrides: dict[tuple[str, ...], str]) -> str | None:
    """The --set that put the value at `loc` there (the last one wins), or None when it came from the file."""
    path = tuple(str(part) for part in loc)
    for key_path, assignment in reversed(overrides.items()):
        depth = min(len(key_path), len(path))
        if key_path[:depth] == path[:depth]:
            return assignment
    return None


# Strict-mode type errors, said as what to write instead.
TYPE_HINTS = {
    "int_type": "must be a whole number written without quotes, e.g. 4",
    "float_type": "must be a number written without quotes, e.g. 0.5",
    "bool_type": "must be true or false, written without quotes",
    "string_type": "must be text; quote a value that YAML would read as a number or boolean, e.g. \"123\"",
}


NUMBER_TYPES = ("int_type", "float_type", "int_from_float", "float_parsing", "int_parsing")


def _number_hint(kind: str, value: Any) -> Optional[str]:
    """A string where a number belongs: quotes are to blame only when the text itself reads as a number."""
    if kind not in NUMBER_TYPES or not isinstance(value, str):
        return None
    try:
        strict_yaml.number_value(value) if strict_yaml.EXPONENT_NUMBER.match(value) else float(value.replace("_", ""))
    except ValueError:
        what = "a whole number, e.g. 4" if kind.startswith("int") else "a number, e.g. 0.5"
        return (f"must be {what} (1e9, 1_000 and 2.5e-3 are numbers too); it was read as the text "
                f"{shown(value)}")
    return None


def describe_errors(error: ValidationError, source: str, overrides: dict[tuple[str, ...], str],
                    schema: type[BaseModel]) -> str:
    """Every problem pydantic found, one line each: the key path, what to write instead, and the --set or
    file the value came from."""
    lines = []
    origins = []
    items = error.errors()
    for item in items[:MAX_LISTED_ERRORS]:
        path = clipped(".".join(str(p) for p in item["loc"]), 80)
        if item["type"] == "extra_forbidden":
            hint = key_hint(schema, item["loc"]) or "; check its spelling against docs/configuration.md"
            line = f"  {path}: unknown key (value {shown(item['input'])}){hint}"
        elif item["type"] == "missing":
            line = f"  {path}: required key is missing"
        elif (hint := _number_hint(item["type"], item["input"])) is not None:
            line = f"  {path}: {hint}"
        else:
            message = TYPE_HINTS.get(item["type"]) or item["msg"].removeprefix("Value error, ")
            if item["type"] == "literal_error":
                message += value_hint(item["input"], re.findall(r"'([^']*)'", item["ctx"]["expected"]))
            # A whole section's input repeats what the message names already.
            got = "" if isinstance(item["input"], dict) else f" (got {shown(item['input'])})"
            line = f"  {path + ': ' if path else ''}{message}{got}"  # a whole-config check names its keys
        if isinstance(item["input"], dict):
            # A check of a whole section names its keys: blame the --set of a key it names, if any.
            named = [assignment for key_path, assignment in overrides.items() if ".".join(key_path) in line]
            origin = ", ".join(named) or None
        else:
            origin = _origin(item["loc"], overrides)
        origins.append(origin)
        lines.append(line if origin is None else f"{line} (from --set {clipped(origin)})")
    more = ([f"  ... and {len(items) - MAX_LISTED_ERRORS:,} more problems, listed once these are fixed"]
            if len(items) > MAX_LISTED_ERRORS else [])
    if all(origin is None for origin in origins):
        return "\n".join([f"invalid configuration in {source}:"] + lines + more)
    lines = [line if origin is not None else f"{line} (in {source})" for line, origin in zip(lines, origins)]
    return "\n".join(["invalid configuration:"] + lines + more)
