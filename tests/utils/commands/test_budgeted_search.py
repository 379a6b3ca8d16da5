"""The frame tune and capacity run their searches in: the work given its stops and bar, the files written after it,
the launcher closed on every path, an unwritable file ending it with one line."""
import errno
import os
import signal
from pathlib import Path

from utils.commands.budgeted_search import BudgetedSearch, run_within_budget
from utils.storage.atomic import OutputWriteError


class Calls:
    def __init__(self):
        self.order: list[str] = []
        self.lines: list[str] = []
        self.bar_total = None


def _search(calls: Calls, work=None, write=None) -> BudgetedSearch:
    def default_work(stops, progress):
        calls.bar_total = progress.total
        calls.order.append("work")

    def default_write(stopped):
        calls.order.append(f"write {stopped}")
        return {"status": "stopped" if stopped else "complete"}

    return BudgetedSearch(90.4, work or default_work, write or default_write, lambda: calls.order.append("close"),
                          calls.lines.append, Path("/runs/here"))


def test_the_work_runs_then_the_files_are_written_then_the_launcher_closes():
    calls = Calls()
    ended = run_within_budget(_search(calls))
    assert calls.order == ["work", "write None", "close"]
    assert ended.document == {"status": "complete"} and ended.stopped is None
    assert calls.bar_total == 90  # the bar counts whole seconds of the budget


def test_a_stop_during_the_work_is_handed_to_the_files_and_the_answer():
    calls = Calls()

    def stopped_work(stops, progress):
        os.kill(os.getpid(), signal.SIGTERM)  # handled by the frame's Stops, not the default handler
        calls.order.append("work")

    ended = run_within_budget(_search(calls, work=stopped_work))
    assert ended.stopped == signal.SIGTERM and ended.document == {"status": "stopped"}
    assert calls.order == ["work", f"write {int(signal.SIGTERM)}", "close"]


def test_a_file_that_cannot_be_written_ends_with_one_line_and_the_launcher_closed():
    calls = Calls()

    def failing_write(stopped):
        raise OutputWriteError(Path("/runs/here/tune.json"), OSError(errno.ENOSPC, "No space left on device"))

    assert run_within_budget(_search(calls, write=failing_write)) is None
    assert calls.order == ["work", "close"]
    assert calls.lines == ["error: could not write /runs/here/tune.json: No space left on device; the runs are in "
                           "/runs/here"]
