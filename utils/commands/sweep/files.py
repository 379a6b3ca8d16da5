"""The files of a sweep directory: sweep.csv (one row per point), sweep.json (the answer and the rows), the
throughput-against-latency plot and report.html. Each is written whole or not at all.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Sequence

from matplotlib.figure import Figure

from utils.commands.sweep.figures import CAMERA_FIGURES
from utils.storage import layout
from utils.storage.atomic import atomic_file, atomic_write_bytes, atomic_write_text
from utils.storage.html_page import HtmlPage

FIGURE_COLUMNS = ("images_per_s", "p50_ms_per_image", "p90_ms_per_image", "pass_p50_spread",
                  "forward_p50_ms_per_image", "peak_pss_mib", "peak_self_rss_mib", "package_j_per_image",
                  "agreement", "random_weights",
                  "map_50_95", "map_50", "map_drop", "scenario", "scenario_valid", "scenario_samples_per_s",
                  "scenario_p99_ms", *CAMERA_FIGURES, "doubt")
# Short headers for the page's table; sweep.csv keeps the column names.
HEADERS = {"images_per_s": "images/s", "p50_ms_per_image": "p50 ms/image", "p90_ms_per_image": "p90 ms/image",
           "pass_p50_spread": "passes' spread",
           "forward_p50_ms_per_image": "forward p50 ms/image", "peak_pss_mib": "peak PSS MiB",
           "peak_self_rss_mib": "peak RSS MiB", "package_j_per_image": "package J/image",
           "map_50_95": "mAP@0.5:0.95", "map_50": "mAP@0.5", "map_drop": "mAP drop",
           "scenario_valid": "LoadGen valid", "scenario_samples_per_s": "LoadGen samples/s",
           "scenario_p99_ms": "LoadGen p99 ms", "cameras_fps_detected": "cameras frames/s",
           "cameras_latency_p99_ms": "cameras p99 ms", "cameras_drop_share": "cameras dropped",
           "cameras_cpu_ms_per_frame": "cameras CPU ms/frame", "cameras_decode_cpu_ms_per_frame": "decode CPU ms",
           "cameras_preprocess_cpu_ms_per_frame": "preprocess CPU ms", "cameras_forward_cpu_ms_per_frame": "forward CPU ms",
           "cameras_postprocess_cpu_ms_per_frame": "postprocess CPU ms"}
AGREEMENT_COLORS = {"reference": "#1a7f37", "equal": "#1a7f37", "within_budget": "#2f6fd6", "close": "#d68a00",
                    "different": "#c80000", "unchecked": "#6b7280", "undecided": "#8b5cf6"}


def sweep_columns(keys: Sequence[str], placement: Sequence[str] = ()) -> list[str]:
    """`placement`: the launcher's columns saying where each point ran (none when it ran here)."""
    return ["point", *keys, "status", "reason", "rounds", *FIGURE_COLUMNS, *placement, "run_dir"]


def write_sweep_tables(directory: Path, document: dict, rows: list[dict], columns: Sequence[str]) -> None:
    with atomic_file(directory / layout.SWEEP_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_text(directory / layout.SWEEP_JSON, json.dumps(document, indent=2, default=str) + "\n")


def _label(row: dict, keys: Sequence[str]) -> str:
    return ", ".join(str(row[key]) for key in keys)


def plot_sweep(rows: list[dict], keys: Sequence[str], path: Path, best: str | None = None,
               front: Sequence[str] = ()) -> Path | None:
    """Throughput against per-image latency, one labelled dot per completed point, coloured by agreement, the
    answer (`best`) ringed; when every point has an mAP, throughput against mAP with the Pareto front (`front`,
    point names). None when no point completed."""
    done = sorted((row for row in rows if row["status"] == "complete"), key=lambda row: row["p50_ms_per_image"])
    if not done:
        return None
    if all(row.get("map_50_95") is not None for row in done):
        return _plot_speed_accuracy(done, keys, path, best, set(front))
    figure = Figure(figsize=(9, 6))
    axes = figure.add_subplot()
    low, high = done[0]["p50_ms_per_image"], done[-1]["p50_ms_per_image"]
    for rank, row in enumerate(done):
        x, y = row["p50_ms_per_image"], row["images_per_s"]
        axes.scatter(x, y, color=AGREEMENT_COLORS.get(row["agreement"], "#6b7280"), s=40, zorder=3)
        if row["point"] == best:
            axes.scatter(x, y, facecolors="none", edgecolors="black", s=180, linewidths=1.5, zorder=4)
        # Labels point inwards at the right edge, and neighbours in latency alternate above and below.
        at_right = high > low and (x - low) / (high - low) > 0.75
        axes.annotate(_label(row, keys) + (" (answer)" if row["point"] == best else ""), (x, y),
                      textcoords="offset points", xytext=(-6 if at_right else 6, 5 if rank % 2 == 0 else -12),
                      ha="right" if at_right else "left", fontsize=8)
    axes.set_xlabel("median pipeline latency per image (ms)")
    axes.set_ylabel("throughput (images/s)")
    axes.set_title(f"points labelled {', '.join(keys)}; ringed: the fastest at equal detections\ncolour: "
                   "detections against the fp32 reference (green equal, orange close, red different, grey unchecked)",
                   fontsize=9)
    return _save_plot(figure, axes, done, path)


def _plot_speed_accuracy(done: list[dict], keys: Sequence[str], path: Path, best: str | None,
                         front: set[str]) -> Path:
    figure = Figure(figsize=(9, 6))
    axes = figure.add_subplot()
    for index, row in enumerate(done):
        x, y = row["map_50_95"], row["images_per_s"]
        axes.scatter(x, y, color=AGREEMENT_COLORS.get(row["agreement"], "#6b7280"), s=40, zorder=3)
        if row["point"] == best:
            axes.scatter(x, y, facecolors="none", edgecolors="black", s=180, linewidths=1.5, zorder=4)
        if row.get("doubt"):
            axes.scatter(x, y, marker="x", color="black", s=90, zorder=5,
                         label="set apart: verdict in doubt" if not any(r.get("doubt") for r in done[:index]) else None)
        axes.annotate(_label(row, keys) + (" (answer)" if row["point"] == best else "")
                      + (" (in doubt)" if row.get("doubt") else ""), (x, y),
                      textcoords="offset points", xytext=(6, 5 if index % 2 == 0 else -12), fontsize=8)
    on_front = sorted((row["map_50_95"], row["images_per_s"]) for row in done if row["point"] in front)
    axes.plot([x for x, _ in on_front], [y for _, y in on_front], color="black", linestyle="--", linewidth=1,
              zorder=2, label="Pareto front (no point is both faster and more accurate)")
    axes.legend(fontsize=8, loc="best")
    axes.set_xlabel("mAP@0.5:0.95 (accuracy pass)")
    axes.set_ylabel("throughput (images/s)")
    axes.set_title(f"points labelled {', '.join(keys)}; ringed: the fastest at equal detections\ncolour: "
                   "detections against the fp32 reference (green equal, blue within the mAP budget, orange close, red "
                   "different, grey unchecked)", fontsize=9)
    return _save_plot(figure, axes, done, path)


def _save_plot(figure: Figure, axes, done: list[dict], path: Path) -> Path:
    """What both sweep plots end with: room for the labels at the edges, the random-weights banner, the PNG."""
    axes.margins(0.15)
    axes.grid(alpha=0.3)
    if any(row.get("random_weights") for row in done):
        figure.suptitle("RANDOM WEIGHTS: timings are real, boxes are not", color="#c80000", weight="bold")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, dpi=110, format="png")
    return atomic_write_bytes(path, buffer.getvalue())


def _answer_figures(answer: dict) -> list[tuple[str, object]]:
    best, edge = answer.get("fastest_equal"), answer.get("margin")
    figures = []
    if best:
        figures += [("fastest at equal detections", best["point"]),
                    ("its ms/image (p50)", best["p50_ms_per_image"]), ("its images/s", best["images_per_s"])]
    if edge:
        verdict = {True: "beyond the noise", False: "within the noise", None: "no interval"}[edge["beyond_noise"]]
        figures += [("runner-up takes (x)", edge["ratio"]), ("margin", verdict)]
    budget = answer.get("fastest_within_budget")
    if budget and (not best or budget["point"] != best["point"]):
        figures += [("fastest within the mAP budget", budget["point"]), ("its ms/image (p50)", budget["p50_ms_per_image"]),
                    ("its mAP drop", budget["map_drop"])]
    fastest = answer.get("fastest_any")
    if fastest and (not best or fastest["point"] != best["point"]):
        figures += [("fastest at any agreement", fastest["point"]), ("its detections", fastest["agreement"])]
    return figures


def write_sweep_report(directory: Path, document: dict, rows: list[dict], columns: Sequence[str]) -> Path:
    """The plot, then report.html with the answer, the table and the plot embedded."""
    keys = list(document["swept"])
    answer = document["answer"]
    best = answer["fastest_equal"]["point"] if answer["fastest_equal"] else None
    plot = plot_sweep(rows, keys, directory / layout.SWEEP_PLOT, best, answer.get("pareto_front") or ())
    page = HtmlPage(f"detbench sweep {document['sweep_id']}")
    if any(row.get("random_weights") for row in rows):
        page.banner("RANDOM WEIGHTS: no model.weights given; timings are real, boxes are not")
    if document["status"] != "complete":
        page.warnings([f"The sweep was {document['status']} ({document['stop_reason']}): the answer covers the "
                       "points that completed."])
    page.heading("Answer").headline(_answer_figures(answer)).paragraph(answer["statement"])
    page.paragraph(f"Ranked by {answer['ranked_by']}. Equal detections: {answer['equal_means']}. Within the "
                   f"budget: {answer['within_budget_means']}. The margin is "
                   "the runner-up's median over the fastest's, with a 95% bootstrap interval from the two points' "
                   "per-batch samples in steps_timer.csv; beyond the noise when the interval lies above 1.")
    for scenario, ranking in (answer.get("by_scenario") or {}).items():
        page.paragraph(f"{ranking['statement']} Ranked by {ranking['ranked_by']}.")
    page.heading("Points")
    # The swept values name each point (and its directory); reasons are long, so they follow the table.
    shown = [name for name in columns if name not in ("point", "reason", "run_dir", "random_weights")]
    page.table([HEADERS.get(name, name) for name in shown], ([row.get(name) for name in shown] for row in rows),
               text_columns=(*keys, "status", "agreement", "scenario", "scenario_valid"),
               row_titles=(row["point"] for row in rows))
    reasons = [f"{row['point']}: {row['status']}: {row['reason']}" for row in rows if row.get("reason")]
    if reasons:
        page.heading("Points that did not complete").warnings(reasons)
    if plot is not None:
        title = ("Throughput against accuracy" if all(row.get("map_50_95") is not None for row in rows
                                                      if row["status"] == "complete") else "Throughput against latency")
        page.heading(title).image(plot, title.lower() + " per point")
    launcher = document.get("launcher") or {}
    where = (f"as a task on the Ray cluster at {launcher.get('address')} with all of its node's CPUs reserved, "
             "and its run directory was brought back beside this page" if launcher.get("name") == "ray" else
             "with its run directory beside this page")
    page.heading("How it ran").paragraph(
        f"config {document['config_file']}, overrides {' '.join(document['overrides']) or 'none'}; each point "
        f"ran in its own process {where}; its console output is in {layout.SWEEP_LOGS_DIR}/.")
    return atomic_write_text(directory / layout.SWEEP_REPORT, page.render())
