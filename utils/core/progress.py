"""The progress bar of long work, on a terminal only: plain output when piped."""
from __future__ import annotations

import shutil
from typing import Optional, TextIO

from tqdm import tqdm


def terminal_bar(total: Optional[int], description: str, file: Optional[TextIO] = None) -> tqdm:
    """A tqdm bar in files, shown only when its file (stderr) is a terminal (disable=None). A terminal that
    reports no size (0 rows, as some recorders and IDE consoles do) would make tqdm hide it: the size
    falls back to 80x24 instead."""
    size = shutil.get_terminal_size()
    return tqdm(total=total, unit="image", desc=description, disable=None, leave=False, ncols=size.columns,
                nrows=size.lines, file=file)
