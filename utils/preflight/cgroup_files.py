"""Where this process's cgroup keeps its limits, and how one of its files is read: the memory and CPU checks
at start-up both judge what the machine offers by them."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

CGROUP_ROOT = Path("/sys/fs/cgroup")


def read_value(path: Path) -> Optional[str]:
    """The file's text, stripped; None where it is absent or unreadable (no such controller, no limit)."""
    try:
        return path.read_text().strip()
    except OSError:
        return None
