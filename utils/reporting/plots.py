"""PNG plots of a run's CSVs (layer types, top layers, step latency, memory timeline, energy, cameras).

Figures are built with matplotlib.figure.Figure, rendered by Agg, never through pyplot: no global backend
switch, no figure left open, safe in a notebook or a headless run.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Sequence

import pandas as pd
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from utils.storage import layout
from utils.storage.atomic import atomic_write_bytes
from utils.measure.layers.path_labels import shorten

RUN_TAG = "run"  # the timed passes' brackets in energy.csv
_PALETTE = colormaps["tab10"].colors


def _step_order(steps, order: Sequence[str]) -> list[str]:
    known = [step for step in order if step in set(steps)]
    return known + sorted(set(steps) - set(known))


def step_colors(steps, order: Sequence[str]) -> dict[str, tuple]:
    """One stable colour per step name: the pipeline's steps keep theirs whatever else is present."""
    ordered = list(order) + sorted(set(steps) - set(order))
    return {step: _PALETTE[i % len(_PALETTE)] for i, step in enumerate(ordered)}


def _bar_figure(rows: int) -> tuple[Figure, object]:
    figure = Figure(figsize=(10, max(3.0, 1.2 + 0.32 * rows)))
    return figure, figure.add_subplot()


BANNER_COLOR = "#c80000"  # the red of the annotated images' banner


def _save(figure: Figure, path: Path | str, note: str | None) -> Path:
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


def _label_bars(axes, bars, labels: list[str]) -> None:
    axes.bar_label(bars, labels=labels, padding=3, fontsize=8)
    axes.margins(x=0.15)


def plot_layer_types(df: pd.DataFrame, path: Path | str, *, note: str | None = None, top: int = 30) -> Path:
    """Horizontal bars of self time per layer type, per forward when layer_types.csv has that column."""
    per_forward = "mean_self_ms_per_forward" in df.columns
    value = "mean_self_ms_per_forward" if per_forward else "self_ms"
    data = df.sort_values(value, ascending=False).head(top).iloc[::-1]
    figure, axes = _bar_figure(len(data))
    bars = axes.barh([str(t) for t in data["type"]], data[value], color=_PALETTE[0])
    if "share_of_forward" in data.columns:
        _label_bars(axes, bars, [f"{share:.1%}" if pd.notna(share) else "" for share in data["share_of_forward"]])
    axes.set_xlabel("self time per model forward (ms)" if per_forward else "self time, total over the run (ms)")
    axes.set_ylabel("layer type")
    axes.set_title("Where the forward pass spends its time, by layer type (labels: share of forward)")
    axes.grid(axis="x", alpha=0.3)
    return _save(figure, path, note)


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
    colors = {kind: _PALETTE[i % len(_PALETTE)] for i, kind in enumerate(dict.fromkeys(data["type"][::-1]))}
    figure, axes = _bar_figure(len(data))
    bars = axes.barh([shorten(p) for p in data["path"]], data["self_ms"], color=[colors[t] for t in data["type"]])
    if "mean_self_ms" in data.columns:
        _label_bars(axes, bars, [_top_layer_label(row) for _, row in data.iterrows()])
    axes.legend(handles=[Patch(color=c, label=k) for k, c in colors.items()], title="layer type",
                loc="lower right", fontsize=8)
    axes.set_xlabel("self time, total over the instrumented pass (ms)")
    axes.set_ylabel("layer (call path)")
    axes.set_title(f"Top {len(data)} layers by self time")
    axes.grid(axis="x", alpha=0.3)
    return _save(figure, path, note)


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
    for step in _step_order(data["step"], order):
        values = data[data["step"] == step]["ms"].to_numpy()
        groups.append((step, values))
        labels.append(f"{step} (n={len(values)})")
    groups, labels = groups[::-1], labels[::-1]  # first pipeline step on top
    figure, axes = _bar_figure(len(groups))
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
    return _save(figure, path, note)


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
    colors = step_colors(lanes, (RUN_TAG, *order))
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
    return _save(figure, path, note)


def energy_domains(df: pd.DataFrame) -> list[str]:
    return [column[:-2] for column in df.columns if column.endswith("_j")]


def plot_energy(df: pd.DataFrame, path: Path | str, *, order: Sequence[str] = (), note: str | None = None,
                total_tag: str = RUN_TAG) -> Path:
    """Grouped bars: joules per step and RAPL domain, summed over occurrences; the run total goes in the title
    rather than a bar that would dwarf the steps."""
    domains = energy_domains(df)
    steps = df[df["tag"] != total_tag] if (df["tag"] != total_tag).any() else df
    rows = _step_order(steps["tag"], order)[::-1]
    steps = steps.set_index("tag").loc[rows]
    figure, axes = _bar_figure(len(rows) * max(1, len(domains)) // 2 + len(rows))
    height = 0.8 / max(1, len(domains))
    for i, domain in enumerate(domains):
        positions = [row + (i - (len(domains) - 1) / 2) * height for row in range(len(rows))]
        bars = axes.barh(positions, steps[f"{domain}_j"], height=height, label=domain, color=_PALETTE[i])
        _label_bars(axes, bars, [f"{j:.3g} J" for j in steps[f"{domain}_j"]])
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
    return _save(figure, path, note)


def measured_frames(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of cameras_frames.csv whose frame arrived inside the window."""
    return df[df["measured"].astype(str).str.lower().isin(("true", "1"))]


def plot_cameras(df: pd.DataFrame, path: Path | str, *, note: str | None = None) -> Path | None:
    """Each camera's latency from arrival to detections (top) and its frames dropped per second (bottom), against
    the seconds since the window opened; None when no frame was measured."""
    frames = measured_frames(df)
    if frames.empty:
        return None
    origin = float(frames["arrival_s"].min())
    figure = Figure(figsize=(10, 6))
    latency_axes, drop_axes = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": (3, 2)})
    streams = sorted(set(frames["stream"]), key=lambda name: (len(name), name))
    colors = {stream: _PALETTE[index % len(_PALETTE)] for index, stream in enumerate(streams)}
    end = float(frames[["arrival_s", "detect_end_s", "dropped_s"]].max().max()) - origin
    bins = list(range(0, int(end) + 2))
    for stream in streams:
        own = frames[frames["stream"] == stream]
        detected = own[own["outcome"] == "detected"].sort_values("arrival_s")
        latency_axes.plot(detected["arrival_s"] - origin, detected["latency_ms"], ".-", markersize=3, linewidth=0.8,
                          color=colors[stream], label=stream)
        dropped = own[own["outcome"] == "dropped"]
        counts = pd.cut(dropped["arrival_s"] - origin, bins, right=False).value_counts(sort=False)
        drop_axes.step(bins[:-1], counts.to_numpy(), where="post", color=colors[stream], label=stream)
    latency_axes.set_ylabel("latency, arrival to detections (ms)")
    latency_axes.set_ylim(bottom=0)
    latency_axes.legend(loc="upper right", fontsize=8)
    latency_axes.set_title("Cameras: latency of every frame detected, and frames dropped")
    drop_axes.set_ylabel("frames dropped per second")
    drop_axes.set_xlabel("seconds since the window opened (by a frame's arrival)")
    drop_axes.set_ylim(bottom=0)
    return _save(figure, path, note)


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
                                                            layout.STEPS_TIMER, layout.MEMORY,
                                                            layout.MEMORY_STEPS, layout.ENERGY,
                                                            layout.CAMERA_FRAMES)}
    written = []
    if table[layout.LAYER_TYPES] is not None:
        written.append(plot_layer_types(table[layout.LAYER_TYPES], run_dir / layout.LAYER_TYPES_PLOT, note=note))
    if table[layout.LAYER_TIMER] is not None:
        written.append(plot_top_layers(table[layout.LAYER_TIMER], run_dir / layout.TOP_LAYERS_PLOT, note=note))
    steps = table[layout.STEPS_TIMER]
    if steps is not None and not timed_step_rows(steps).empty:
        written.append(plot_step_latency(steps, run_dir / layout.STEP_LATENCY_PLOT, order=order, note=note))
    if table[layout.MEMORY] is not None:
        written.append(plot_memory_timeline(table[layout.MEMORY], run_dir / layout.MEMORY_PLOT,
                                            table[layout.MEMORY_STEPS], order=order, note=note))
    energy = table[layout.ENERGY]
    if energy is not None and energy_domains(energy):
        written.append(plot_energy(energy, run_dir / layout.ENERGY_PLOT, order=order, note=note))
    if table[layout.CAMERA_FRAMES] is not None:
        cameras = plot_cameras(table[layout.CAMERA_FRAMES], run_dir / layout.CAMERAS_PLOT, note=note)
        if cameras is not None:
            written.append(cameras)
    return written
