"""utils/scenarios/context.py: the progress bar over the passes, shown on a terminal only."""
from __future__ import annotations

import io
import os
import pty
import sys

from utils.record.steps import PassKind
from utils.scenarios.context import PassProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_counts_images_and_names_the_pass_on_a_terminal_only():
    terminal, piped = Terminal(), io.StringIO()
    for stream in (terminal, piped):
        progress = PassProgress(12, "run-7", file=stream)
        progress.start(PassKind.WARMUP)
        progress.advance(2)
        progress.start(PassKind.TIMED, 1)
        progress.advance(3)
        progress.grow(14)
        progress.start(PassKind.TIMED, 2)
        progress.advance(1)
        progress.add(10)  # a LoadGen test's samples: counted on from where the bar is
        progress.close()
    shown = terminal.getvalue()
    assert "run-7: timed pass 2" in shown and "5/14" in shown and "image" in shown
    assert "run-7: timed pass 3" in shown and "6/16" in shown
    assert piped.getvalue() == ""


def read_all(master: int) -> str:
    """What was written to the pseudo-terminal, its other end closed: reads until Linux says EIO."""
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_a_terminal_that_reports_no_size_still_shows_the_bar(monkeypatch):
    """A new pseudo-terminal says it has 0 rows and 0 columns, as some terminal recorders do: tqdm alone
    hides its bar there; the pass bar falls back to 80x24."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    master, replica = pty.openpty()
    try:
        with os.fdopen(replica, "w") as terminal:
            monkeypatch.setattr(sys, "stderr", terminal)  # tqdm asks stderr's size, and only stderr's
            progress = PassProgress(4, "run-0")
            progress.start(PassKind.TIMED, 0)
            progress.advance(4)
            progress.grow(4)
            progress.close()
        shown = read_all(master)
    finally:
        os.close(master)
    assert "run-0: timed pass 1" in shown and "4/4" in shown
