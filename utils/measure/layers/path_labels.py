"""Layer paths as chart labels, for the PNG plots and report.html's inline charts alike. Kept apart from plots.py
so that a page without plots does not import matplotlib."""
from __future__ import annotations

LABEL_WIDTH = 48  # characters of a layer path on a chart's axis


def shorten(text: str, width: int = LABEL_WIDTH) -> str:
    """Keeps the end of a long layer path, the part that tells layers apart."""
    text = str(text)
    return text if len(text) <= width else "…" + text[-(width - 1):]
