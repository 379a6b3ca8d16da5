"""The files of a capacity directory beyond its runs: capacity.csv (one row per run), capacity.json (the answer and
the state `--resume` reads), and at the end capacity.png (each searched candidate's p99 and drops against N) and
report.html. Each is written whole or not at all."""
from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Optional

from matplotlib.figure import Figure

from utils.storage import layout
from utils.storage.atomic import atomic_file, atomic_write_text
from utils.storage.html_page import HtmlPage

CAPACITY_CSV, CAPACITY_JSON, CAPACITY_PLOT = "capacity.csv", "capacity.json", "capacity.png"
COLUMNS = ("phase", "candidate", "kind", "count", "round", "status", "reason", "duration_s", "window_s",
           "fps_detected", "delivered", "detected", "dropped", "p99_ms", "p99_low", "p99_high", "drop_share",
           "drop_low", "drop_high", "steady", "served", "sure", "decode_cpu_ms", "preprocess_cpu_ms",
           "forward_cpu_ms", "postprocess_cpu_ms", "cpu_ms_per_frame", "agreement", "load_average",
           "other_processes_cpu_share", "seconds", "run_dir")


def write_capacity_files(directory: Path, document: dict, rows: list[dict], report: bool) -> None:
    with atomic_file(directory / CAPACITY_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_text(directory / CAPACITY_JSON, json.dumps(document, indent=2, default=str) + "\n")
    if report:
        write_capacity_report(directory, document)


def plot_capacity(answer: dict, budget_ms: float, max_drop: float, path: Path) -> Optional[Path]:
    """p99 latency (left) and the share dropped (right) against N, one line per candidate searched, the bounds
    dashed; None when no point has a figure."""
    searches = [search for search in answer["searches"] if any(row["p99_ms"] is not None for row in search["points"])]
    if not searches:
        return None
    figure = Figure(figsize=(10, 4))
    latency, drops = figure.subplots(1, 2)
    for search in searches:
        rows = [row for row in search["points"] if row["p99_ms"] is not None]
        counts = [row["count"] for row in rows]
        best = answer["best"] and answer["best"]["candidate"] == search["candidate"]
        style = {"marker": "o", "linewidth": 2.0 if best else 0.8, "label": search["label"]}
        latency.plot(counts, [row["p99_ms"] for row in rows], **style)
        drops.plot(counts, [row["drop_share"] for row in rows], **style)
    latency.axhline(budget_ms, linestyle="--", color="#c80000", linewidth=1)
    drops.axhline(max_drop, linestyle="--", color="#c80000", linewidth=1)
    for axes, label in ((latency, "p99 latency from arrival (ms)"), (drops, "share of frames dropped")):
        axes.set_xlabel("cameras (N)")
        axes.set_ylabel(label)
        axes.grid(alpha=0.3)
        axes.xaxis.get_major_locator().set_params(integer=True)
    latency.legend(fontsize="x-small", loc="best")
    figure.suptitle("Each N's median over its runs; dashed: the budget and the drop bound", fontsize=9)
    figure.tight_layout()
    with atomic_file(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=110)
    return path


def _headline(document: dict) -> list[tuple[str, object]]:
    answer = document["answer"]
    best, bound = answer["best"], answer["bound"]
    figures = [("budget p99 ms", document["budget_ms"]), ("drop bound", f"{document['max_drop']:.1%}")]
    if best:
        figures += [("cameras served", ("at least " if best["at_least"] else "") + str(best["largest"])),
                    ("by", best["label"])]
    if bound and bound["cameras"]:
        figures += [("bound from isolated costs", round(bound["cameras"], 2))]
    if answer.get("closeness") is not None:
        figures += [("of the bound", f"{answer['closeness']:.0%}")]
    return figures


def write_capacity_report(directory: Path, document: dict) -> Path:
    answer = document["answer"]
    plot = plot_capacity(answer, document["budget_ms"], document["max_drop"], directory / CAPACITY_PLOT)
    page = HtmlPage(f"detbench capacity {document['capacity_id']}")
    if document["status"] != "complete":
        page.warnings([f"The search was {document['status']} ({document['stop_reason']}): the answer covers what "
                       "was measured; --resume continues it."])
    page.heading("Answer").headline(_headline(document)).paragraph(answer["statement"])
    if plot is not None:
        page.image(plot, "p99 latency and drops against the number of cameras")
    for search in answer["searches"]:
        page.heading(f"{search['label']}: from {search['floor'] + 1} camera(s)")
        page.paragraph(f"{search['candidate']}; detections {search['verdict'] or 'not judged'}.")
        page.table(["N", "verdict", "runs", "p99 ms", "p99 95% interval", "dropped", "drop interval", "frames/s",
                    "steady", "load average"],
                   ([row["count"], row["verdict"], len(row["runs"]), run["p99_ms"],
                     _pair(run["p99_interval"], "{:.1f}"), run["drop_share"], _pair(run["drop_interval"], "{:.1%}"),
                     run["fps_detected"], run["steady"], run["load_average"]]
                    for row in search["points"] for run in row["runs"][-1:]),
                   text_columns=("verdict", "p99 95% interval", "drop interval", "steady"))
    if document.get("race"):
        page.heading("The race of the ways").paragraph(document["race"]["statement"])
        if document["race"]["dropped"]:
            page.warnings([f"{drop['candidate']} (round {drop['round']}): {drop['reason']}"
                           for drop in document["race"]["dropped"]])
    if document["left_out"] or document["notes"]:
        page.heading("Left out").warnings([*document["left_out"], *document["notes"]])
    page.heading("How it ran").paragraph(
        f"config {document['config_file']}, overrides {' '.join(document['overrides']) or 'none'}, source "
        f"{document['source']}, {document['cores']} core(s); every run in its own process, its run directory beside "
        f"this page, its console output in {layout.SWEEP_LOGS_DIR}/; one row per run in {CAPACITY_CSV}.")
    return atomic_write_text(directory / layout.SWEEP_REPORT, page.render())


def _pair(values: Optional[list], text: str) -> str:
    return "" if not values else f"{text.format(values[0])}-{text.format(values[1])}"
