"""plots/cameras.png: each camera's latency and drops against the window's time, drawn from cameras_frames.csv
alone (so a finished run can be drawn again) with utils/storage/png_figure.py."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from utils.storage.png_figure import PALETTE, save_png


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
    colors = {stream: PALETTE[index % len(PALETTE)] for index, stream in enumerate(streams)}
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
    return save_png(figure, path, note)
