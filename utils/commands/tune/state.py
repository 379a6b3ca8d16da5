"""The race's state: every run of every candidate, the verdict each candidate may claim and where it came from,
the drops and the rounds. Plain data that tune.json holds, so that `--resume` picks up a stopped race.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from utils.commands.sweep.answer import BUDGET_VERDICTS, PointFigures
from utils.commands.tune.looks import FULL
from utils.commands.tune.space import Candidate


@dataclass
class Run:
    """One run of a candidate: one round of it, in a process of its own or shared with its way's other batch sizes."""

    candidate: str
    round: int
    checks: bool  # it ran its own accuracy check (the first of its way, or its detections differed)
    run_dir: str  # relative to the tune directory
    status: str = "pending"  # complete, failed or stopped once it ended
    reason: str = ""
    seconds: float = 0.0  # wall time of the run itself
    start_s: float = 0.0  # the start of the process it ran in, where it was the first there
    preparation_s: float = 0.0  # of `seconds`, preparing its model where the cache did not have it (export, int8)
    placement: dict = field(default_factory=dict)  # where the launcher ran it (--launcher ray: its node)
    look: str = FULL  # a first look or a full run (utils/commands/tune/looks.py)
    timed_batches: Optional[int] = None  # a first look's timed batches; None: every batch
    check_images: Optional[int] = None  # the images its own check scores first
    figures_row: dict = field(default_factory=dict)
    figures: Optional[PointFigures] = None

    def document(self) -> dict:
        return {key: value for key, value in asdict(self).items() if key not in ("figures", "figures_row")}


@dataclass
class Entry:
    """A candidate in the race."""

    candidate: Candidate
    runs: list[Run] = field(default_factory=list)
    verdict: Optional[str] = None  # the accuracy verdict it may claim, once settled
    doubt: Optional[str] = None  # why that verdict cannot pick it (undecided, a drop interval on the budget)
    verdict_from: str = ""  # whose check the verdict is: its own name, or the candidate whose it reuses
    verdict_images: Optional[int] = None  # the images that check scored
    needs_check: bool = False  # its detections differ from its way's judged run (or none judged yet)
    dropped: Optional[dict] = None  # {"round", "reason"}

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def complete(self) -> list[Run]:
        return [run for run in self.runs if run.status == "complete"]

    @property
    def can_win(self) -> Optional[bool]:
        """None while its verdict is unsettled."""
        if self.verdict is None:
            return None
        return self.verdict in BUDGET_VERDICTS and self.doubt is None


def run_dir_name(candidate: str, number: int, taken: Callable[[str], bool]) -> str:
    """`<candidate>,round=<k>`; a later attempt of a stopped round gets `,try=<n>` (nothing is overwritten)."""
    name, attempt = f"{candidate},round={number}", 2
    unique = name
    while taken(unique):
        unique, attempt = f"{name},try={attempt}", attempt + 1
    return unique
