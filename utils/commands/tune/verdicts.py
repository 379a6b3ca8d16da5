"""Which accuracy verdict each candidate may claim. Accuracy is judged once per way of computing the network
(runtime x precision x quantization settings): the way's first run checks itself against the reference; the
other batch sizes and thread counts of the way take that verdict only where their detections were checked
equal to the judged run's (utils/commands/tune/same_detections.py), else they check their own in their next round.
A verdict that cannot win (not within the budget, or in doubt) drops the candidate at once.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from utils.commands.sweep.answer import REFERENCE
from utils.commands.tune.same_detections import same_detections
from utils.commands.tune.state import Entry, Run


def _drop_if_barred(entry: Entry, number: int, whose: str) -> None:
    if entry.can_win is False and entry.dropped is None:
        why = entry.doubt or f"its detections are {entry.verdict} against the reference's"
        entry.dropped = {"round": number, "reason": f"cannot win: {why} ({whose})"}


def take_verdict(entry: Entry, run: Run) -> None:
    """A completed run that checked itself (or is the reference) settles its candidate's verdict."""
    if run.checks or run.figures.agreement == REFERENCE:
        entry.verdict, entry.doubt = run.figures.agreement, run.figures.doubt
        entry.verdict_from, entry.needs_check = entry.name, False
        _drop_if_barred(entry, run.round, "its own check")


def drop_failed(entries: Sequence[Entry], entry: Entry, run: Run) -> None:
    if entry.dropped is None:
        entry.dropped = {"round": run.round, "reason": f"its run failed: {run.reason}"}
    if run.checks and "cannot run (exit 2)" in run.reason:
        # The way itself cannot run here: its other candidates would fail the same way.
        for other in entries:
            if other.candidate.way == entry.candidate.way and other.dropped is None:
                other.dropped = {"round": run.round, "reason": f"its way of computing cannot run here, as "
                                                               f"{entry.name} showed: {run.reason}"}


def settle_waiting(entries: Sequence[Entry], directory: Path) -> list[str]:
    """Candidates that ran without their own check take their way's verdict where detections are equal;
    returns what the console says of those whose detections differ."""
    judges = {entry.candidate.way: entry for entry in entries if entry.verdict_from == entry.name and entry.complete}
    judging = {entry.candidate.way for entry in entries
               if any(run.status == "pending" and run.checks for run in entry.runs)}
    lines = []
    for entry in entries:
        if entry.verdict is not None or entry.needs_check or not entry.complete:
            continue
        judge = judges.get(entry.candidate.way)
        if judge is None:
            if entry.candidate.way not in judging:
                entry.needs_check = True  # nobody is left to judge its way: it checks itself next round
            continue
        judged_run = next((run for run in judge.complete if run.checks), judge.complete[0])
        equal, how = same_detections(directory / judged_run.run_dir, directory / entry.complete[0].run_dir)
        if equal:
            entry.verdict, entry.doubt, entry.verdict_from = judge.verdict, judge.doubt, judge.name
            _drop_if_barred(entry, entry.complete[0].round, f"the verdict of {judge.name}, whose detections it gives")
        else:
            entry.needs_check = True
            lines.append(f"{entry.name}: detections differ from {judge.name}'s ({how}); it checks its own accuracy "
                         "in its next round")
    return lines
