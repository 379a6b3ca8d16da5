"""compare.csv (every row of a comparison, one section column) and compare.html (the same, readable)."""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

from utils.commands.compare.comparison import Comparison
from utils.commands.compare.timings import scenario_title
from utils.storage import layout
from utils.storage.atomic import atomic_file, atomic_write_text
from utils.storage.html_page import HtmlPage

HTML_LAYERS = 40  # the page shows the largest changes; compare.csv holds every call path


def write_compare_csv(directory: Path, rows: list[dict], columns: Sequence[str]) -> Path:
    target = directory / layout.COMPARE_CSV
    with atomic_file(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return target


def _verdict(row: dict) -> str:
    if row.get("significant") is None:
        return "no interval"
    return "significant" if row["significant"] else "within the noise"


def _timing_table(page: HtmlPage, rows: list[dict], with_interval: bool) -> None:
    columns = ["name", "A", "B", "B - A", "B/A"] + (["CI low", "CI high", "verdict"] if with_interval else ["note"])
    # Without intervals the page says why once, above the table; a row's own note then only marks a one-sided row.
    cells = ([row["name"], row.get("a"), row.get("b"), row.get("difference"), row.get("ratio")]
             + ([row.get("ci_low"), row.get("ci_high"), _verdict(row)] if with_interval else
                ["" if row.get("a") is not None and row.get("b") is not None else row.get("note")])
             for row in rows)
    page.table(columns, cells, text_columns=("name", "verdict", "note"))


def write_compare_html(directory: Path, names: tuple[str, str], paths: tuple[Path, Path],
                       comparison: Comparison) -> Path:
    environment, steps, scenario, accuracy = (comparison.environment, comparison.steps, comparison.scenario,
                                              comparison.accuracy)
    page = HtmlPage(f"detbench compare: {names[0]} (A) vs {names[1]} (B)")
    headline = []
    for row in steps:
        if row["name"] in ("pipeline", "forward") and row.get("ratio") is not None:
            headline += [(f"{row['name']} B/A", row["ratio"]), (f"{row['name']} verdict", _verdict(row))]
    page.headline(headline)
    page.paragraph(f"A: {paths[0]}  B: {paths[1]}")
    page.heading("Environment differences")
    page.paragraph(f"{len(environment)} field(s) differ, {comparison.same} are the same.")
    if environment:
        page.table(["field", "A", "B"], ([row["field"], row["a"], row["b"]] for row in environment),
                   text_columns=("field", "A", "B"))
    if scenario:
        title, what = scenario_title(list(scenario))
        page.heading(title)
        page.paragraph(f"{scenario[0]['note']}: {what}.")
        _timing_table(page, [dict(row, note="") for row in scenario], with_interval=False)
    page.heading("Steps: milliseconds per image")
    page.paragraph("Medians over the timed batches of steps_timer.csv; B/A with a 95% bootstrap interval; "
                   "significant when the interval excludes 1.")
    _timing_table(page, steps, with_interval=True)
    page.heading("Layer types: self milliseconds per image")
    page.paragraph("No intervals: the layer files hold the totals of one instrumented pass, not per-batch "
                   "samples. Largest change first.")
    _timing_table(page, comparison.layer_types, with_interval=False)
    page.heading("Layers: self milliseconds per image, joined on call path")
    page.paragraph(f"The {HTML_LAYERS} largest changes (no intervals, as above); {layout.COMPARE_CSV} holds "
                   "every path.")
    _timing_table(page, comparison.layers[:HTML_LAYERS], with_interval=False)
    if accuracy:
        page.heading("Accuracy")
        page.paragraph("The accuracy pass of each run (mAP at the mAP settings, per-class AP from "
                       f"{layout.ACCURACY}); B - A, no intervals: one figure per run.")
        page.table(["figure", "A", "B", "B - A", "note"],
                   ([row["name"], row["a"], row["b"], row["difference"], row["note"]] for row in accuracy),
                   text_columns=("figure", "note"))
    return atomic_write_text(directory / layout.COMPARE_HTML, page.render())
