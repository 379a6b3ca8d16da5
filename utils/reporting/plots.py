"""PNG plots of a run's CSVs: the harness's own (layer types, top layers, step latency), then each measurement's
(utils/measure/<name>/plots.py) in the order report.html shows them, and a camera run's
(utils/scenarios/cameras/plots.py). Drawn with utils/storage/png_figure.py.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
from matplotlib.patches import Patch

from utils.measure.contract import Plot
from utils.measure.layers.path_labels import shorten
from utils.reporting.run_report import page_measurements
from utils.storage import layout
from utils.storage.png_figure import PALETTE, bar_figure, label_bars, ordered_steps, save_png, step_colors


def plot_layer_types(df: pd.DataFrame, path: Path | str, *, note: str | None = None, top: int = 30) -> Path:
    """Horizontal bars of self time per layer type, per forward when layer_types.csv has that column."""
    per_forward = "mean_self_ms_per_forward" in df.columns
    value = "mean_self_ms_per_forward" if per_forward else "self_ms"
    data = df.sort_values(value, ascending=False).head(top).iloc[::-1]
    figure, axes = bar_figure(len(data))
    bars = axes.barh([str(t) for t in data["type"]], data[value], color=PALETTE[0])
    if "share_of_forward" in data.columns:
        label_bars(axes, bars, [f"{share:.1%}" if pd.notna(share) else "" for share in data["share_of_forward"]])
    axes.set_xlabel("self time per model forward (ms)" if per_forward else "self time, total over the run (ms)")
    axes.set_ylabel("layer type")
    axes.set_title("Where the forward pass spends its time, by layer type (labels: share of forward)")
    axes.grid(axis="x", alpha=0.3)
    return save_png(figure, path, note)


def _top_layer_label(row: pd.Series) -> str:
    """ms per call, and from the profiled batch (when it ran) the MiB the layer allocated itself and its output."""
    parts = [f"{row['mean_self_ms']:.2f} ms/call"] if pd.notna(row["mean_self_ms"]) else []
    if pd.notna(row.get("alloc_self_bytes")):
        parts.append(f"alloc {row['alloc_self_bytes'] / 2 ** 20:.2f} MiB")
    if pd.notna(row.get("output_bytes")):
        parts.append(f"out {row['output_bytes'] / 2 ** 20:.2f} MiB")
    return ", ".join(parts)


def plot_top_layers(df: pd.DataFrame, path: Path | str, *, top: int = 20, note: str | None = None) -> Path:
    """The `top` layers (call paths) by self time, coloured by layer type."""
    data = df.sort_values("self_ms", ascending=False).head(top).iloc[::-1]
    colors = {kind: PALETTE[i % len(PALETTE)] for i, kind in enumerate(dict.fromkeys(data["type"][::-1]))}
    figure, axes = bar_figure(len(data))
    bars = axes.barh([shorten(p) for p in data["path"]], data["self_ms"], color=[colors[t] for t in data["type"]])
    if "mean_self_ms" in data.columns:
        label_bars(axes, bars, [_top_layer_label(row) for _, row in data.iterrows()])
    axes.legend(handles=[Patch(color=c, label=k) for k, c in colors.items()], title="layer type",
                loc="lower right", fontsize=8)
    axes.set_xlabel("self time, total over the instrumented pass (ms)")
    axes.set_ylabel("layer (call path)")
    axes.set_title(f"Top {len(data)} layers by self time")
    axes.grid(axis="x", alpha=0.3)
    return save_png(figure, path, note)


def _milliseconds(ms: float) -> str:
    return f"{ms:.0f} ms" if ms >= 100 else f"{ms:.3g} ms"


def timed_step_rows(df: pd.DataFrame) -> pd.DataFrame:
    """steps_timer rows of the clean timed passes with images: no warm-up, no hooked or profiled pass (their
    overhead would blur the distribution), no batch whose files were all skipped."""
    return df[(df["pass_kind"] == "timed") & (df["images"] > 0)]


def plot_step_latency(df: pd.DataFrame, path: Path | str, *, order: Sequence[str] = (),
                      note: str | None = None) -> Path:
    """Box plot of per-batch milliseconds per step over the timed passes, warm-up excluded."""
    data = timed_step_rows(df)
    if data.empty:
        raise ValueError("no timed (non warm-up) step rows to plot")
    groups, labels, colors = [], [], step_colors(data["step"], order)
    for step in ordered_steps(data["step"], order):
        values = data[data["step"] == step]["ms"].to_numpy()
        groups.append((step, values))
        labels.append(f"{step} (n={len(values)})")
    groups, labels = groups[::-1], labels[::-1]  # first pipeline step on top
    figure, axes = bar_figure(len(groups))
    boxes = axes.boxplot([values for _, values in groups], orientation="horizontal", tick_labels=labels,
                         patch_artist=True, widths=0.6, medianprops={"color": "black"})
    for box, (step, values) in zip(boxes["boxes"], groups):
        box.set_facecolor(colors[step])
        box.set_alpha(0.7)
    for row, (_, values) in enumerate(groups, start=1):
        axes.annotate(f"median {_milliseconds(pd.Series(values).median())}", (1.0, row), xycoords=("axes fraction", "data"),
                      xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    all_values = pd.Series([v for _, values in groups for v in values])
    if len(all_values) and all_values.min() > 0 and all_values.max() / all_values.min() > 50:
        axes.set_xscale("log")
    axes.set_xlabel("time per batch (ms" + (", log scale)" if axes.get_xscale() == "log" else ")"))
    axes.set_title("Latency per pipeline step (timed batches, warm-up excluded)")
    axes.grid(axis="x", alpha=0.3, which="both")
    figure.subplots_adjust(right=0.85)
    return save_png(figure, path, note)


def _read_table(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        table = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return None
    return table if len(table) else None


def write_all_plots(run_dir: Path | str, *, order: Sequence[str] = (), note: str | None = None) -> list[Path]:
    """Writes into run_dir/plots/ every plot whose CSV exists and has rows; returns the written paths.
    `order` is the run's step order (the record's identity), which keeps colours and rows stable."""
    run_dir = Path(run_dir)
    table = {name: _read_table(run_dir / name) for name in (layout.LAYER_TYPES, layout.LAYER_TIMER,
                                                            layout.STEPS_TIMER, layout.CAMERA_FRAMES)}
    written = []
    if table[layout.LAYER_TYPES] is not None:
        written.append(plot_layer_types(table[layout.LAYER_TYPES], run_dir / layout.LAYER_TYPES_PLOT, note=note))
    if table[layout.LAYER_TIMER] is not None:
        written.append(plot_top_layers(table[layout.LAYER_TIMER], run_dir / layout.TOP_LAYERS_PLOT, note=note))
    steps = table[layout.STEPS_TIMER]
    if steps is not None and not timed_step_rows(steps).empty:
        written.append(plot_step_latency(steps, run_dir / layout.STEP_LATENCY_PLOT, order=order, note=note))
    for measurement in page_measurements():
        for plot in measurement.plots:
            tables = [_read_table(run_dir / name) for name in plot.reads]
            if tables[0] is not None and (path := _drawing(plot)(tables, run_dir / plot.file, order, note)):
                written.append(path)
    if table[layout.CAMERA_FRAMES] is not None:
        from utils.scenarios.cameras.plots import plot_cameras
        cameras = plot_cameras(table[layout.CAMERA_FRAMES], run_dir / layout.CAMERAS_PLOT, note=note)
        if cameras is not None:
            written.append(cameras)
    return written


def _drawing(plot: Plot) -> Callable:
    module, _, name = plot.draw.partition(":")
    return getattr(importlib.import_module(module), name)
