"""Which accuracy verdict each candidate may claim. Accuracy is judged once per way of computing the network
(runtime x precision x quantization settings): the way's first run checks itself against the reference; the
other batch sizes and thread counts of the way take that verdict only where their detections were checked
equal to the judged run's (utils/commands/tune/same_detections.py), else they check their own in their next round.
A verdict that cannot win (not within the budget, or in doubt) drops the candidate at once, but for one
undecided on fewer images than the way could score: the way's next check scores as many as would decide it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Collection, Mapping, Optional, Sequence

from utils.checks.accuracy.label_free import UNDECIDED
from utils.commands.sweep.answer import REFERENCE
from utils.commands.tune.same_detections import same_detections
from utils.commands.tune.state import Entry, Run


@dataclass(frozen=True)
class Check:
    """What a run's own check says of its images: how many it scored, how many the run could have scored (int8
    never scores its calibration images), and how many would decide an undecided verdict."""

    scored: Optional[int] = None
    scorable: Optional[int] = None
    needed: Optional[int] = None


def check_of(summary: Mapping) -> Check:
    """From a run's summary.json."""
    agreement = summary.get("agreement") or {}
    scored = (summary.get("accuracy") or {}).get("images") or agreement.get("images")
    scorable = (summary.get("calibration") or {}).get("scored_images") or summary.get("images_found")
    needed = ((agreement.get("label_free") or {}).get("images_needed")
              or (agreement.get("accuracy_drop") or {}).get("images_needed"))
    return Check(scored, scorable, needed)


def images_to_settle(check: Check) -> Optional[int]:
    """The images the way's next check scores after an undecided one: what the verdict said would decide it (twice
    what it scored where it said nothing more), at most what the way can score. None: it scored all it could."""
    if check.scored is None or check.scorable is None or check.scored >= check.scorable:
        return None
    wanted = check.needed if check.needed and check.needed > check.scored else 2 * check.scored
    return min(wanted, check.scorable)


def _drop_if_barred(entry: Entry, number: int, whose: str) -> None:
    if entry.can_win is False and entry.dropped is None:
        why = entry.doubt or f"its detections are {entry.verdict} against the reference's"
        entry.dropped = {"round": number, "reason": f"cannot win: {why} ({whose})"}


def take_verdict(entry: Entry, run: Run, check: Check = Check()) -> Optional[int]:
    """A completed run that checked itself (or is the reference) settles its candidate's verdict; undecided on
    fewer images than its way can score, it stays unsettled and the images its next check scores are returned."""
    if not (run.checks or run.figures.agreement == REFERENCE):
        return None
    more = images_to_settle(check) if run.checks and run.figures.agreement == UNDECIDED else None
    if more is not None:
        entry.verdict, entry.doubt, entry.verdict_from, entry.needs_check = None, None, "", True
        return more
    entry.verdict, entry.doubt = run.figures.agreement, run.figures.doubt
    entry.verdict_from, entry.needs_check, entry.verdict_images = entry.name, False, check.scored
    if run.figures.agreement == UNDECIDED and check.scored is not None and entry.doubt is not None:
        entry.doubt += f" (on {check.scored} image(s), all its way could score)"
    _drop_if_barred(entry, run.round, "its own check")
    return None


def drop_failed(entries: Sequence[Entry], entry: Entry, run: Run) -> None:
    if entry.dropped is None:
        entry.dropped = {"round": run.round, "reason": f"its run failed: {run.reason}"}
    if run.checks and "cannot run (exit 2)" in run.reason:
        # The way itself cannot run here: its other candidates would fail the same way.
        for other in entries:
            if other.candidate.way == entry.candidate.way and other.dropped is None:
                other.dropped = {"round": run.round, "reason": f"its way of computing cannot run here, as "
                                                               f"{entry.name} showed: {run.reason}"}


def settle_waiting(entries: Sequence[Entry], directory: Path,
                   shared: Callable[[Run, Run], Optional[Sequence[str]]] = lambda judged, other: None) -> list[str]:
    """Candidates that ran without their own check take their way's verdict where detections are equal (over
    `shared(judged run, its run)`, the images both timed; None: all); returns what the console says of those whose
    detections differ."""
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
        other_run = entry.complete[0]
        equal, how = same_detections(directory / judged_run.run_dir, directory / other_run.run_dir,
                                     shared(judged_run, other_run))
        if equal:
            entry.verdict, entry.doubt, entry.verdict_from = judge.verdict, judge.doubt, judge.name
            entry.verdict_images = judge.verdict_images
            _drop_if_barred(entry, entry.complete[0].round, f"the verdict of {judge.name}, whose detections it gives")
        else:
            entry.needs_check = True
            lines.append(f"{entry.name}: detections differ from {judge.name}'s ({how}); it checks its own accuracy "
                         "in its next round")
    return lines


def checkers(order: Sequence[Entry], judged_ways: Collection, unchecked: Callable[[tuple], bool]) -> set[str]:
    """Which of a round's candidates (in the round's order) run their own accuracy check: those that must (their
    detections differ from their way's judged run's, or their own check was undecided on too few images), then the
    first of each way no check has judged and none of those checks. `unchecked(way)`: the reference, whose way
    needs no check."""
    chosen = {entry.name for entry in order if entry.needs_check and not unchecked(entry.candidate.way)}
    checking = {entry.candidate.way for entry in order if entry.name in chosen}
    for entry in order:
        way = entry.candidate.way
        if (entry.verdict is None and way not in judged_ways and way not in checking and not unchecked(way)):
            chosen.add(entry.name)
            checking.add(way)
    return chosen

