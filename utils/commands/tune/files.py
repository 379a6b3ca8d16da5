"""The files of a tune directory beyond its runs: sweep.csv and sweep.json as for a sweep (one row per
candidate, with where the race left it), tune.json (the race's state, for --resume), and at the end race.png
(each candidate's figure round by round) and report.html. Each is written whole or not at all.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

from matplotlib.figure import Figure

from utils.storage import layout
from utils.storage.atomic import atomic_file, atomic_write_text
from utils.storage.html_page import HtmlPage
from utils.commands.sweep.files import HEADERS, sweep_columns, write_sweep_tables
from utils.commands.tune.looks import FIRST_LOOK

TUNE_JSON = "tune.json"
RACE_PLOT = "race.png"
RACE_COLUMNS = ("race", "race_reason", "verdict_from", "verdict_images", "looks")


def tune_columns(keys: Sequence[str]) -> list[str]:
    columns = sweep_columns(keys)
    return columns[:-1] + list(RACE_COLUMNS) + columns[-1:]


def write_tune_files(directory: Path, document: dict, state: dict, keys: Sequence[str], report: bool) -> None:
    write_sweep_tables(directory, document, document["rows"], tune_columns(keys))
    atomic_write_text(directory / TUNE_JSON, json.dumps(state, indent=2, default=str) + "\n")
    if report:
        write_tune_report(directory, document, keys)


def plot_race(race: list[dict], winner: Optional[str], unit: str, path: Path) -> Optional[Path]:
    """One line per candidate through its figure in each round it ran, a hollow mark where that was a first look
    (a few batches, apart from the full runs); a cross where it was dropped."""
    raced = [entry for entry in race if entry["figures"]]
    if not raced:
        return None
    figure = Figure(figsize=(8, 4.5))
    axes = figure.subplots()
    for entry in raced:
        rounds = sorted(entry["figures"], key=int)
        values = [entry["figures"][number] for number in rounds]
        numbers = [int(number) for number in rounds]
        is_winner = entry["candidate"] == winner
        color = "#1a7f37" if is_winner else "#9ca3af"
        axes.plot(numbers, values, marker="o", linewidth=2.5 if is_winner else 0.8, color=color,
                  zorder=3 if is_winner else 1, label=entry["candidate"] if is_winner else None)
        looks = {int(number): kind for number, kind in (entry.get("looks") or {}).items()}
        first = [(number, value) for number, value in zip(numbers, values) if looks.get(number) == FIRST_LOOK]
        if first:
            axes.plot(*zip(*first), marker="o", linestyle="none", markerfacecolor="white", markeredgecolor=color,
                      zorder=4 if is_winner else 2)
        if entry["dropped_round"] is not None:
            axes.plot([numbers[-1]], [values[-1]], marker="x", color="#c80000", markersize=8)
    axes.set_xlabel("round")
    axes.set_ylabel(unit.strip())
    axes.set_title("The race: each candidate's figure per round (hollow: a first look; x: dropped after it)")
    axes.xaxis.get_major_locator().set_params(integer=True)
    if winner:
        axes.legend(loc="best", fontsize="small")
    figure.tight_layout()
    with atomic_file(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=110)
    return path


def write_tune_report(directory: Path, document: dict, keys: Sequence[str]) -> Path:
    answer = document["answer"]
    winner = (answer.get("winner") or {}).get("candidate")
    plot = plot_race(document["race"], winner, document["unit"], directory / RACE_PLOT)
    page = HtmlPage(f"detbench tune {document['sweep_id']}")
    rows = document["rows"]
    if any(row.get("random_weights") for row in rows):
        page.banner("RANDOM WEIGHTS: no model.weights given; timings are real, boxes are not")
    if document["status"] != "complete":
        page.warnings([f"The race was {document['status']} ({document['stop_reason']}): the answer covers what "
                       "was measured; --resume continues it."])
    figures = []
    if winner:
        figures += [("winner", winner), ("its figure", answer["winner"]["shown"]),
                    ("rounds run / led", f"{answer['winner']['rounds']} / {answer['winner']['rounds_led']}")]
    if answer.get("margin"):
        edge = answer["margin"]
        figures += [("runner-up takes (x)", edge["ratio"]),
                    ("margin", "beyond the noise" if edge["beyond_noise"] else "within the noise")]
    page.heading("Answer").headline(figures).paragraph(answer["statement"])
    if document.get("follow_up"):
        page.paragraph(document["follow_up"])
    if plot is not None:
        page.heading("The race").image(plot, "each candidate's figure per round")
    rounds = ([entry["number"], (entry.get("look") or {}).get("text", ""), len(entry["field"]),
               len(entry.get("capped") or ()), len(entry.get("dropped") or ()), entry.get("seconds")]
              for entry in answer["rounds"])
    page.heading("Rounds").table(["round", "its runs", "candidates", "left out by the budget", "dropped after it",
                                  "seconds"], rounds, text_columns=("its runs",))
    page.paragraph(document["time"]["statement"] + ".")
    if answer["dropped"]:
        page.heading("Dropped").warnings([f"{drop['candidate']} (round {drop['round']}): {drop['reason']}"
                                          for drop in answer["dropped"]])
    page.heading("Candidates")
    shown = [name for name in tune_columns(keys) if name not in ("point", "reason", "run_dir", "random_weights",
                                                                 "race_reason")]
    page.table([HEADERS.get(name, name) for name in shown], ([row.get(name) for name in shown] for row in rows),
               text_columns=(*keys, "status", "agreement", "scenario", "scenario_valid", "race", "verdict_from",
                             "looks"),
               row_titles=(row["point"] for row in rows))
    page.heading("The space").paragraph(
        "Axes: " + "; ".join(f"{key}: {', '.join(values)}" for key, values in document["swept"].items()) + ".")
    if document["left_out"] or document["notes"]:
        page.warnings([f"left out before measuring: {line}" for line in document["left_out"]] + document["notes"])
    page.heading("How it ran").paragraph(
        f"config {document['config_file']}, overrides {' '.join(document['overrides']) or 'none'}; each run in its "
        f"own process, its run directory beside this page and its console output in {layout.SWEEP_LOGS_DIR}/.")
    return atomic_write_text(directory / layout.SWEEP_REPORT, page.render())
