"""Several runs in one process: `benchmark.py runs SPEC --set run.output_dir=DIR`, where SPEC is a JSON list of
[run id, benchmark.py arguments]. Threads are process-wide, but the batch sizes of one way of computing at one
thread count can share a process: the imports and the start are paid once instead of once per run. After each
run a marker line on stdout and stderr names it, its exit status and its seconds, so that the race splits the
process's outcome back into one per run.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Callable, Optional

from utils.core.errors import STOPPED, ExitStatus
from utils.launchers.base import PointOutcome

MARKER = "detbench-tune-run"


def runs_main(argv: list[str], run: Callable[[list[str]], int]) -> int:
    """`run`: benchmark.py's main. Stops at the first run a signal stopped, with its status."""
    spec, common = json.loads(argv[0]), argv[1:]
    for name, arguments in spec:
        started = time.monotonic()
        try:
            code = int(run([*arguments, *common]))
        except KeyboardInterrupt:
            code = ExitStatus.INTERRUPTED
        line = f"{MARKER}\t{name}\t{code}\t{time.monotonic() - started:.3f}"
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
        if code in STOPPED:
            return code
    return ExitStatus.OK


def _segments(text: str) -> tuple[dict[str, str], dict[str, tuple[int, float]]]:
    """Each run's share of the output (up to its marker) and its (status, seconds)."""
    parts, ended, current = {}, {}, []
    for line in text.splitlines(keepends=True):
        fields = line.rstrip("\n").split("\t")
        if fields[0] == MARKER and len(fields) == 4:
            parts[fields[1]] = "".join(current)
            ended[fields[1]] = (int(fields[2]), float(fields[3]))
            current = []
        else:
            current.append(line)
    return parts, ended


def split_outcome(names: list[str], outcome: PointOutcome) -> dict[str, tuple[PointOutcome, float]]:
    """One outcome and the run's own seconds per run. A run with no marker did not end: it was stopped with the
    process, or the process ended in it (its status and last words are the process's)."""
    stdout, ended = _segments(outcome.stdout)
    stderr, _ = _segments(outcome.stderr)
    split: dict[str, tuple[PointOutcome, float]] = {}
    lost: Optional[str] = None
    for name in names:
        if name in ended:
            code, seconds = ended[name]
            split[name] = (PointOutcome(code, stdout.get(name, ""), stderr.get(name, ""),
                                        placement=outcome.placement), seconds)
            continue
        if lost is None and outcome.returncode not in (None, ExitStatus.OK, *STOPPED):
            # The process itself ended here: this run carries its status and its last words.
            lost = name
            tail = outcome.stderr.splitlines()
            split[name] = (PointOutcome(outcome.returncode, "", "\n".join(tail[-40:]),
                                        placement=outcome.placement), 0.0)
            continue
        split[name] = (PointOutcome(None, lost=f"not run: the process it shared ended before it ({lost or 'a stop'})",
                                    stopped=lost is None, placement=outcome.placement), 0.0)
    return split
