"""`python benchmark.py compare RUN_A RUN_B [--out DIR] [--fail-above PCT [--metric M ...]]`: what differs between
two runs, and which timing differences are beyond the noise. Printed as tables and written as compare.csv and
compare.html. With --fail-above, a regression gate for CI: exit status 1 when B is worse than A by more than PCT
on a chosen figure, beyond the noise (utils/commands/compare/gate.py says how)."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from utils.commands.compare.accuracy import accuracy_rows
from utils.commands.compare.comparison import Comparison
from utils.commands.compare.environment import differences, settings
from utils.commands.compare.gate import judge, parse_threshold, verdict_line
from utils.commands.compare.gate_runs import DEFAULT_METRICS, METRICS, GateError, contention_notes, gate_figures
from utils.commands.compare.timings import (COLUMNS, layer_rows, layer_type_rows, scenario_rows, scenario_title,
                                            step_rows)
from utils.core.errors import ExitStatus
from utils.storage.finished_run import FinishedRun, RunFilesError
from utils.storage import layout
from utils.storage.atomic import OutputWriteError
from utils.commands.compare.files import write_compare_csv, write_compare_html

CONSOLE_LAYERS = 15
_UNSAFE = re.compile(r"[^A-Za-z0-9._=,+\-]+")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="benchmark.py compare", description=__doc__)
    parser.add_argument("run_a", metavar="RUN_A", help="run directory (or a sweep's point) taken as the baseline")
    parser.add_argument("run_b", metavar="RUN_B", help="run directory compared with it (ratios are B/A)")
    parser.add_argument("--out", help="folder for compare.csv and compare.html "
                                      "(default outputs/compare_<A>_vs_<B>/)")
    parser.add_argument("--fail-above", metavar="PCT",
                        help="regression gate: exit 1 when B is worse than A by more than PCT on a --metric and the "
                             "95%% interval of the change excludes no change (percent of A; for map_drop, "
                             "percentage points of mAP@0.5:0.95)")
    parser.add_argument("--metric", dest="metrics", action="append", choices=METRICS, metavar="METRIC",
                        help=f"a figure the gate judges, repeatable: {', '.join(METRICS)} (default latency)")
    return parser.parse_args(argv)


def default_folder(a: FinishedRun, b: FinishedRun) -> Path:
    return Path("outputs") / _UNSAFE.sub("_", f"compare_{a.name}_vs_{b.name}")[:200]


def _table(rows: list[dict], columns: list[str]) -> str:
    frame = pd.DataFrame(rows, columns=columns)
    return frame.to_string(index=False, float_format=lambda value: f"{value:.4g}", na_rep="")


def _verdicts(rows: list[dict]) -> list[dict]:
    named = {True: "significant", False: "noise", None: ""}
    return [{**row, "verdict": named[row.get("significant")]} for row in rows]


def report(a: FinishedRun, b: FinishedRun, comparison: Comparison) -> str:
    environment, scenario, accuracy = comparison.environment, comparison.scenario, comparison.accuracy
    lines = [f"compare A: {a.path}", f"        B: {b.path}"]
    lines += [f"note: {side}: {run.killed_note()}; compared on those batches" for side, run in (("A", a), ("B", b))
              if run.killed]
    lines += ["", f"Environment: {len(environment)} field(s) differ, {comparison.same} are the same"]
    if environment:
        lines.append(_table([{k: (str(v)[:60] if v is not None else "(absent)") for k, v in row.items()}
                             for row in environment], ["field", "a", "b"]))
    if scenario:
        title, _ = scenario_title(list(scenario))
        lines += ["", f"{title} ({scenario[0]['note']}; one value a side, no interval)",
                  _table(list(scenario), ["name", "a", "b", "difference", "ratio"])]
    lines += ["", "Steps, ms per image (medians over timed batches; B/A with 95% bootstrap CI)",
              _table(_verdicts(comparison.steps), ["name", "a", "b", "ratio", "ci_low", "ci_high", "verdict", "n_a", "n_b"])]
    for title, rows in (("Layer types, self ms per image (no per-batch samples: no interval)",
                         comparison.layer_types),
                        (f"Layers joined on call path, self ms per image, the {CONSOLE_LAYERS} largest changes",
                         comparison.layers[:CONSOLE_LAYERS])):
        missing = [row["note"] for row in rows if "a" not in row]
        lines += ["", title, "\n".join(missing) or _table(rows, ["name", "a", "b", "difference", "ratio"])]
    if accuracy:
        lines += ["", "Accuracy (the accuracy pass; B - A)", _table(list(accuracy), ["name", "a", "b", "difference",
                                                                                      "note"])]
    return "\n".join(lines)


def _threshold(text: str | None) -> float | None:
    try:
        return parse_threshold(text) if text is not None else None
    except ValueError as error:
        raise GateError(str(error)) from None


def compare_main(argv: list[str]) -> int:
    args = parse_args(argv)
    figures = []
    try:
        if args.metrics and args.fail_above is None:
            raise GateError("--metric chooses what the gate judges: add --fail-above PCT")
        threshold = _threshold(args.fail_above)
        a, b = FinishedRun(args.run_a), FinishedRun(args.run_b)
        if threshold is not None:
            figures = gate_figures(a, b, tuple(dict.fromkeys(args.metrics or DEFAULT_METRICS)))
        environment, same = differences(settings(a), settings(b))
        steps = step_rows(a, b)
        scenario = scenario_rows(a, b)
    except (RunFilesError, GateError) as error:
        print(f"error: compare: {error}", file=sys.stderr)
        return error.status
    layer_types, layers, accuracy = layer_type_rows(a, b), layer_rows(a, b), accuracy_rows(a, b)
    comparison = Comparison(environment, same, steps, layer_types, layers, accuracy, scenario)
    print(report(a, b, comparison))
    folder = Path(args.out) if args.out else default_folder(a, b)
    environment_rows = [{"section": "environment", "name": row["field"], "a": row["a"], "b": row["b"]}
                        for row in environment]
    try:
        write_compare_csv(folder, environment_rows + scenario + steps + layer_types + layers + accuracy, COLUMNS)
        write_compare_html(folder, (a.name, b.name), (a.path, b.path), comparison)
    except OutputWriteError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.status
    print(f"\nfiles: {folder / layout.COMPARE_CSV}, {folder / layout.COMPARE_HTML}")
    if threshold is None:
        return ExitStatus.OK
    verdicts = [judge(figure, threshold) for figure in figures]
    print("\nRegression gate (B against A):")
    for verdict in verdicts:
        print(verdict_line(verdict))
    for note in contention_notes(a, b):
        print(note)
    regressed = [verdict.figure.metric for verdict in verdicts if verdict.regressed]
    print(f"gate: FAILED on {', '.join(regressed)}" if regressed else "gate: passed")
    # A regression fails the command as a failed run does (1), never as a mistake in it (2).
    return ExitStatus.FAILED if regressed else ExitStatus.OK
