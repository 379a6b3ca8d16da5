"""'Did you mean ...?' for a misspelt config key or value: the closest of the names that are allowed there."""
from __future__ import annotations

import difflib
from typing import Any, Iterable, Optional

from pydantic import BaseModel

CUTOFF = 0.6  # difflib's ratio; `backnd` -> `backend` is 0.92, unrelated names of this config stay below 0.5


def closest(word: Any, choices: Iterable[str]) -> Optional[str]:
    """The allowed name most like `word`, or None when none is close (or `word` is not text)."""
    if not isinstance(word, str) or not word or len(word) > 200:
        return None
    found = difflib.get_close_matches(word, [str(choice) for choice in choices], n=1, cutoff=CUTOFF)
    return found[0] if found else None


def section_model(root: type[BaseModel], path: tuple) -> Optional[type[BaseModel]]:
    """The model class that holds the keys at `path` (a section's path), or None when it is not a section."""
    model = root
    for part in path:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def key_hint(root: type[BaseModel], loc: tuple) -> str:
    """'; did you mean `runtime.backend`?' for an unknown key at `loc`, or ''."""
    model = section_model(root, tuple(loc[:-1]))
    guess = closest(loc[-1], model.model_fields) if model is not None else None
    if guess is None:
        return ""
    return f"; did you mean `{'.'.join([*map(str, loc[:-1]), guess])}`?"


def value_hint(value: Any, allowed: Iterable[str]) -> str:
    """'; did you mean `openvino`?' for a value close to one of `allowed`, or ''."""
    guess = closest(value, allowed)
    return f"; did you mean `{guess}`?" if guess is not None and guess != value else ""
