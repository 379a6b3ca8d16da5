"""Settings that only the loaded model can judge, refused at start-up with exit status 2."""
from __future__ import annotations

from typing import Optional, Sequence

from utils.core.bounded_text import shown
from utils.core.errors import UsageError


class StartRefused(UsageError):
    """The run cannot start with these settings; the message says what and how to fix it."""


def check_class_ids(classes: Optional[Sequence[int]], class_names: Sequence[str], arch: str) -> None:
    """postprocess.classes may only name classes the model has: any other id would silently match nothing."""
    if not classes:
        return
    unknown = sorted({c for c in classes if c >= len(class_names)})
    if unknown:
        last = len(class_names) - 1
        raise StartRefused(
            f"postprocess.classes {shown(list(classes))} names class ids {shown(unknown)} that model.arch "
            f"{arch} does not have: its {len(class_names)} classes are ids 0-{last} (0 is {class_names[0]!r}, "
            f"{last} is {class_names[last]!r}); keep ids 0-{last}, or remove postprocess.classes to keep all")
