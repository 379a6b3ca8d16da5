"""plots/memory_timeline.png: resident memory over the run with the steps below it, drawn from memory.csv and
memory_steps.csv (utils/storage/png_figure.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import pandas as pd
from matplotlib.figure import Figure

from utils.record.steps import RUN_STEP
from utils.storage.png_figure import save_png, step_colors


def spans_from_labels(df: pd.DataFrame) -> pd.DataFrame:
    """(step, start_s, end_s) from consecutive samples sharing a step label: a coarse stand-in for the exact
    step intervals, only the innermost step shows."""
    spans = []
    labels = df["step"].fillna("").astype(str).tolist()
    times = df["t_s"].tolist()
    start = 0
    for i in range(1, len(labels) + 1):
        if i == len(labels) or labels[i] != labels[start]:
            if labels[start]:
                spans.append({"step": labels[start], "start_s": times[start], "end_s": times[i - 1]})
            start = i
    return pd.DataFrame(spans, columns=["step", "start_s", "end_s"])


def plot_memory_timeline(df: pd.DataFrame, path: Path | str, steps_df: pd.DataFrame | None = None, *,
                         order: Sequence[str] = (), note: str | None = None) -> Path:
    """RSS over time with one lane per step below it showing when each step ran (same time axis)."""
    spans = steps_df if steps_df is not None else spans_from_labels(df)
    lanes = list(spans.sort_values("start_s")["step"].drop_duplicates())  # in the order the steps first ran
    colors = step_colors(lanes, (RUN_STEP, *order))
    figure = Figure(figsize=(11, 4.5 + 0.3 * len(lanes)))
    rss_axes, lane_axes = figure.subplots(2, 1, sharex=True,
                                          gridspec_kw={"height_ratios": (3, max(1.0, 0.35 * len(lanes)))})
    with_children = "children_rss_mib" in df.columns and (df["children_rss_mib"].fillna(0) > 0).any()
    rss_axes.plot(df["t_s"], df["rss_mib"], color="0.15", linewidth=1.2,
                  label="process + children (children count pages shared with the process)")
    if with_children:
        rss_axes.plot(df["t_s"], df["self_rss_mib"], color="tab:blue", linewidth=1.0, linestyle="--",
                      label="process alone")
        rss_axes.legend(fontsize=8, loc="best", framealpha=0.9)
    peak = df["rss_mib"].idxmax()
    rss_axes.plot(df["t_s"][peak], df["rss_mib"][peak], "o", color="tab:red", markersize=4)
    rss_axes.annotate(f"peak {df['rss_mib'][peak]:.0f} MiB", (df["t_s"][peak], df["rss_mib"][peak]),
                      xytext=(6, -4), textcoords="offset points", va="top", fontsize=8, color="tab:red",
                      bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    rss_axes.set_ylabel("RSS (MiB)")
    rss_axes.set_title("Resident memory during the run")
    rss_axes.grid(alpha=0.3)
    rss_axes.tick_params(labelbottom=False)
    for lane, step in enumerate(lanes):
        rows = spans[spans["step"] == step]
        lane_axes.broken_barh(list(zip(rows["start_s"], rows["end_s"] - rows["start_s"])), (lane - 0.4, 0.8),
                              color=colors[step])
    lane_axes.set_yticks(range(len(lanes)), lanes, fontsize=8)
    lane_axes.set_ylim(len(lanes) - 0.5, -0.5)
    lane_axes.set_ylabel("step")
    lane_axes.set_xlabel("time since sampling started (s)")
    lane_axes.grid(axis="x", alpha=0.3)
    return save_png(figure, path, note)


def draw(tables: Sequence[Optional[pd.DataFrame]], target: Path, order: Sequence[str],
         note: Optional[str]) -> Optional[Path]:
    """The measurement's plot (utils/measure/contract.py, Plot.draw): the samples, with memory_steps.csv's exact
    step windows where it has rows."""
    samples, steps = tables
    return plot_memory_timeline(samples, target, steps, order=order, note=note)
