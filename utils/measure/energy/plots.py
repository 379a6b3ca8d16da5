"""plots/energy.png: joules per step and RAPL domain, drawn from energy.csv (utils/storage/png_figure.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from utils.record.steps import RUN_STEP
from utils.storage.png_figure import PALETTE, bar_figure, label_bars, ordered_steps, save_png


def energy_domains(df: pd.DataFrame) -> list[str]:
    return [column[:-2] for column in df.columns if column.endswith("_j")]


def plot_energy(df: pd.DataFrame, path: Path | str, *, order: Sequence[str] = (), note: str | None = None,
                total_tag: str = RUN_STEP) -> Path:
    """Grouped bars: joules per step and RAPL domain, summed over occurrences; the run total goes in the title
    rather than a bar that would dwarf the steps."""
    domains = energy_domains(df)
    steps = df[df["tag"] != total_tag] if (df["tag"] != total_tag).any() else df
    rows = ordered_steps(steps["tag"], order)[::-1]
    steps = steps.set_index("tag").loc[rows]
    figure, axes = bar_figure(len(rows) * max(1, len(domains)) // 2 + len(rows))
    height = 0.8 / max(1, len(domains))
    for i, domain in enumerate(domains):
        positions = [row + (i - (len(domains) - 1) / 2) * height for row in range(len(rows))]
        bars = axes.barh(positions, steps[f"{domain}_j"], height=height, label=domain, color=PALETTE[i])
        label_bars(axes, bars, [f"{j:.3g} J" for j in steps[f"{domain}_j"]])
    axes.set_yticks(range(len(rows)), [f"{tag} (×{count})" for tag, count in zip(rows, steps["count"])])
    axes.set_xlabel("energy, summed over all occurrences of the step (J)")
    axes.set_ylabel("step")
    title = "Energy per step and RAPL domain"
    if total_tag in set(df["tag"]):
        total = df[df["tag"] == total_tag].iloc[0]
        title += f" (timed passes {total['duration_s']:.1f} s: " + ", ".join(
            f"{domain} {total[f'{domain}_j']:.1f} J" for domain in domains) + ")"
    axes.set_title(title)
    axes.legend(title="domain", fontsize=8, loc="lower right")
    axes.grid(axis="x", alpha=0.3)
    return save_png(figure, path, note)


def draw(tables: Sequence[Optional[pd.DataFrame]], target: Path, order: Sequence[str],
         note: Optional[str]) -> Optional[Path]:
    """The measurement's plot (utils/measure/contract.py, Plot.draw): none when energy.csv names no domain."""
    energy = tables[0]
    if not energy_domains(energy):
        return None
    return plot_energy(energy, target, order=order, note=note)
