"""The progress bar of long work (utils/core/progress.py): shown on a terminal only, plain output when piped, and the
terminal's size with the 80x24 fallback where a terminal reports none."""
import io

from utils.core.progress import terminal_bar


def test_a_bar_in_a_file_that_is_not_a_terminal_writes_nothing():
    out = io.StringIO()
    with terminal_bar(3, "calibrating", file=out) as bar:
        bar.update(3)
    assert out.getvalue() == "" and bar.disable


def test_a_bar_on_a_terminal_counts_images_with_its_description(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    # A terminal that reports no size (0 rows): the bar still gets one, so tqdm does not hide it.
    monkeypatch.setenv("COLUMNS", "0")
    monkeypatch.setenv("LINES", "0")
    out = Terminal()
    with terminal_bar(4, "calibrating", file=out) as bar:
        bar.update(2)
        bar.refresh()
        assert "calibrating" in out.getvalue() and "2/4" in out.getvalue() and "image" in out.getvalue()
    assert bar.ncols > 0 and bar.nrows > 0 and not bar.leave  # a size of its own; gone once done
