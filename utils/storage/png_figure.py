"""The pieces every PNG plot of a run is drawn with (the harness's in utils/reporting/plots.py, a measurement's in
its folder): one palette, one colour per step, bars sized to their rows, and the atomic write with the note's
banner.

Figures are built with matplotlib.figure.Figure, rendered by Agg, never through pyplot: no global backend
switch, no figure left open, safe in a notebook or a headless run. Importing this module imports matplotlib:
only the code that draws does (a run without plots never loads it).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from utils.storage.atomic import atomic_write_bytes

PALETTE = colormaps["tab10"].colors
BANNER_COLOR = "#c80000"  # the red of the annotated images' banner


def ordered_steps(steps, order: Sequence[str]) -> list[str]:
    known = [step for step in order if step in set(steps)]
    return known + sorted(set(steps) - set(known))


def step_colors(steps, order: Sequence[str]) -> dict[str, tuple]:
    """One stable colour per step name: the pipeline's steps keep theirs whatever else is present."""
    ordered = list(order) + sorted(set(steps) - set(order))
    return {step: PALETTE[i % len(PALETTE)] for i, step in enumerate(ordered)}


def bar_figure(rows: int) -> tuple[Figure, object]:
    figure = Figure(figsize=(10, max(3.0, 1.2 + 0.32 * rows)))
    return figure, figure.add_subplot()


def label_bars(axes, bars, labels: list[str]) -> None:
    axes.bar_label(bars, labels=labels, padding=3, fontsize=8)
    axes.margins(x=0.15)


def save_png(figure: Figure, path: Path | str, note: str | None) -> Path:
    """Lays out, puts the note (e.g. the random-weights warning) in a red banner across the top, and writes
    the PNG atomically."""
    path = Path(path)
    if note:
        banner_height = 0.42 / figure.get_figheight()  # about 0.4 inch whatever the figure's size
        figure.patches.append(Rectangle((0, 1 - banner_height), 1, banner_height, transform=figure.transFigure,
                                        color=BANNER_COLOR, zorder=10))
        figure.text(0.5, 1 - banner_height / 2, note, ha="center", va="center", fontsize=11, color="white",
                    weight="bold", zorder=11)
        figure.tight_layout(rect=(0, 0, 1, 1 - banner_height))
    else:
        figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=110, format="png")
    atomic_write_bytes(path, buffer.getvalue())
    return path
