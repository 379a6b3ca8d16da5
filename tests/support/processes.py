"""The processes the suite starts, found by the mark every one of them inherits in its environment (conftest.py's
`no_process_outlives_its_test` uses them). Standard library only: conftest.py imports this for every session."""
from __future__ import annotations

import os
from pathlib import Path

SESSION_MARK = "DETBENCH_TEST_SESSION"
# Helpers a library starts once and keeps for the life of the test process, by design.
LONG_LIVED = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver", b"compile_worker")
GRACE_S = 5.0  # for a process the test ended to finish exiting


def pids() -> set[int]:
    return {int(name) for name in os.listdir("/proc") if name.isdigit()}


def carries(pid: int, mark: bytes) -> bool:
    try:
        return mark in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def marked(candidates, mark: bytes, before: set[int]) -> dict[int, str]:
    """Those of `candidates` alive (not zombies) with this session's mark, and not started by a process of the
    suite that was there before the test (a cluster a module's fixture started keeps its own workers); an orphan,
    taken over by init or another reaper from outside the suite, counts: pid -> command line."""
    found = {}
    for pid in candidates:
        if pid == os.getpid() or not carries(pid, mark):
            continue
        try:
            state, parent = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[:2]
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        parent = int(parent)
        if state == b"Z" or (parent in before and parent != os.getpid() and carries(parent, mark)):
            continue
        if not any(name in command for name in LONG_LIVED):
            found[pid] = command.replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    return found
