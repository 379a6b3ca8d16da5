"""The frame of a command that searches within a time budget (tune, capacity): stop signals caught as a stop
(Stops), a progress bar counting the budget's seconds, the command's files written at the end whether its work
finished or was stopped, and its launcher closed whatever happened. A file that cannot be written ends it with
one line naming where the runs are."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from tqdm import tqdm

from utils.launchers.base import Stops
from utils.storage.atomic import OutputWriteError

BAR_FORMAT = "{l_bar}{bar}| {n:.0f}/{total:.0f} s{postfix}"


@dataclass(frozen=True)
class BudgetedSearch:
    budget_s: float
    work: Callable[[Stops, tqdm], None]  # the search, given the stops and the bar it moves
    write: Callable[[Optional[int]], Any]  # the final files, given the stop signal received (or None)
    close: Callable[[], None]  # the launcher's
    console: Callable[[str], None]
    runs_dir: Path


@dataclass(frozen=True)
class SearchEnded:
    document: Any  # what `write` returned
    stopped: Optional[int]  # the stop signal received, or None


def run_within_budget(search: BudgetedSearch) -> Optional[SearchEnded]:
    """The search run in its frame; None when its files could not be written (the line printed)."""
    stops = Stops()
    try:
        with stops.handled(), tqdm(total=round(search.budget_s), unit="s", disable=None,
                                   bar_format=BAR_FORMAT) as progress:
            search.work(stops, progress)
        document = search.write(stops.received)
    except OutputWriteError as error:
        search.console(f"error: {error}; the runs are in {search.runs_dir}")
        return None
    finally:
        search.close()
    return SearchEnded(document, stops.received)
