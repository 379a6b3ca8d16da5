"""py-spy sampling this very process with native frames, started and stopped from outside the pipeline.

`py-spy record --native --idle` attaches to the run's own pid and samples every Python thread. It writes its
chrometrace format: per thread, when each frame of the stack started and ended, on py-spy's own clock
(microseconds since it started). A clock mark ties that clock to the step timer's: the main thread spends a
few tens of milliseconds in `detbench_sampler_clock_mark` when sampling starts and again before it stops; py-spy
sees the function appear and disappear at its next sample, so each edge bounds the offset from above and the
tightest bound is kept (utils.measure.below_layer.native_time.clock_offset_us).

A missing py-spy, a refused ptrace and a sampler that dies mid-run end the sampling, never the run: the
result says which part is missing and why.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import threading
import time
from pathlib import Path
from typing import Optional

from utils.measure.below_layer.record import SamplerResult
from utils.record.sections import MEASURED

MARK_FUNCTION = "detbench_sampler_clock_mark"
MARK_S = 0.05
# A mark lasts at least this many sampling intervals: py-spy's intervals are exponential, so it misses a mark of
# one interval 37% of the time, of two 14%.
MARK_INTERVALS = 2
SETTLE_S = 0.3
STALL_NS = 100_000_000
SAMPLER_NICE = -10
PRIORITY_LISTINGS = 20
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 60.0
PERMISSION_HINT = ("ptrace is not permitted: run as root, set /proc/sys/kernel/yama/ptrace_scope to 0, or give "
                   "py-spy CAP_SYS_PTRACE (containers: --cap-add SYS_PTRACE)")


def detbench_sampler_clock_mark(seconds: float, settle_s: float = 0.0, timeout_s: float = 10.0) -> tuple[int, int]:
    """Busy for at least `seconds` in a frame py-spy can recognise; returns its (start, end) on perf_counter_ns.

    With `settle_s`, it also runs until the process has not been held still for longer than STALL_NS for that
    long: py-spy stops the process while it samples, and its first native samples stall it for a second or
    more while it reads the libraries' symbols. That stall belongs before the timed passes, not in them."""
    start = last = last_stall = time.perf_counter_ns()
    deadline, limit = start + int(seconds * 1e9), start + int(timeout_s * 1e9)
    while True:
        now = time.perf_counter_ns()
        if now - last > STALL_NS:
            last_stall = now
        last = now
        if now >= deadline and now - last_stall >= settle_s * 1e9 or now >= limit:
            return start, now


def raise_priority(pid: int) -> Optional[int]:
    """py-spy holds the run still while it reads a sample: on a busy machine every wait of its for a core is the
    run's time. A higher priority (nice SAMPLER_NICE, where this process may set it) shortens those waits.
    Linux keeps a nice value per thread, and a new thread takes its creator's: each of py-spy's threads gets it,
    listed again until no thread appears that a thread not yet raised may have started. Returns the nice value
    set, or None where it may not."""
    raised: set[str] = set()
    try:
        for _ in range(PRIORITY_LISTINGS):
            tasks = set(os.listdir(f"/proc/{pid}/task")) - raised
            if not tasks:
                break
            for task in tasks:
                os.setpriority(os.PRIO_PROCESS, int(task), SAMPLER_NICE)
            raised |= tasks
    except OSError:
        return None
    return SAMPLER_NICE


def find_py_spy(search_path: Optional[str] = None) -> Optional[str]:
    """py-spy on PATH, else beside this interpreter's own scripts (a venv used without activating it)."""
    if search_path is None:
        search_path = os.pathsep.join(filter(None, (os.environ.get("PATH"), sysconfig.get_path("scripts"))))
    return shutil.which("py-spy", path=search_path)


def _behind_s(text: str) -> Optional[float]:
    lags = [float(value) for value in re.findall(r"([0-9.]+)s behind in sampling", text)]
    return max(lags) if lags else None


def _counts(text: str) -> tuple[Optional[int], Optional[int]]:
    found = re.search(r"Samples: (\d+) Errors: (\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (None, None)


def _why_it_failed(stdout: str, stderr: str, returncode: Optional[int]) -> str:
    text = (stderr + "\n" + stdout).strip()
    if "Permission Denied" in text or "Operation not permitted" in text or "EPERM" in text:
        return PERMISSION_HINT
    if returncode is not None and returncode < 0:
        return f"py-spy was killed by {signal.Signals(-returncode).name}"
    last = next((line.strip() for line in text.splitlines()
                 if line.strip().startswith(("Error", "py-spy> Error"))), None)
    return f"py-spy exited with status {returncode}" + (f": {last}" if last else "")


class PySpySampler:
    """Start with `start()` before the timed passes and `stop()` after them; `stop()` returns a SamplerResult."""

    def __init__(self, rate: int, scratch: Path, pid: Optional[int] = None, search_path: Optional[str] = None,
                 mark_s: float = MARK_S, settle_s: float = SETTLE_S):
        self.rate = rate
        self.scratch = Path(scratch)
        self.pid = pid if pid is not None else os.getpid()
        self.search_path = search_path
        self.mark_s, self.settle_s = max(mark_s, MARK_INTERVALS / rate), settle_s
        self.main_thread = threading.get_ident()  # py-spy names threads by their pthread id
        self.process: Optional[subprocess.Popen] = None
        self.priority: Optional[int] = None
        self.result: Optional[SamplerResult] = None
        self._marks: list[tuple[int, int]] = []
        self._command: list[str] = []

    @property
    def output(self) -> Path:
        return self.scratch / "py-spy.chrometrace.json"

    def _log(self, name: str) -> str:
        try:
            return (self.scratch / name).read_text(errors="replace")
        except OSError:
            return ""

    def start(self) -> Optional[SamplerResult]:
        """Starts sampling; a SamplerResult (unavailable) when it cannot, None when it runs."""
        executable = find_py_spy(self.search_path)
        if executable is None:
            self.result = SamplerResult("unavailable", "py-spy is not installed (not on PATH nor beside this "
                                        "Python): pip install py-spy", rate=self.rate)
            return self.result
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._command = [executable, "record", "--native", "--idle", "--rate", str(self.rate), "--format",
                         "chrometrace", "--output", str(self.output), "--pid", str(self.pid)]
        with open(self.scratch / "stdout.txt", "wb") as stdout, open(self.scratch / "stderr.txt", "wb") as stderr:
            # Its own session: a Ctrl-C at the terminal reaches the run, which then stops the sampler itself.
            self.process = subprocess.Popen(self._command, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while "Sampling process" not in self._log("stdout.txt"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                return self._failed("unavailable", "did not start")
            time.sleep(0.02)
        self.priority = raise_priority(self.process.pid)
        self._marks.append(detbench_sampler_clock_mark(self.mark_s, self.settle_s))
        return None

    def _failed(self, status: str, when: str) -> SamplerResult:
        process = self.process
        if process.poll() is None:
            process.kill()
        process.wait()
        why = _why_it_failed(self._log("stdout.txt"), self._log("stderr.txt"), process.returncode)
        self.result = SamplerResult(status, f"the sampler {when}: {why}", self._command, rate=self.rate)
        return self.result

    @property
    def running(self) -> bool:
        return self.process is not None and self.result is None

    def stop(self) -> SamplerResult:
        if self.result is not None:
            return self.result
        if self.process is None:
            self.result = SamplerResult("unavailable", "the sampler was never started", rate=self.rate)
            return self.result
        if self.process.poll() is not None:
            return self._failed("died", "died during the timed passes (its samples are lost: py-spy writes them "
                                        "only when it stops)")
        self._marks.append(detbench_sampler_clock_mark(self.mark_s))
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return self._failed("died", f"did not write its samples within {STOP_TIMEOUT_S:g} s of being stopped")
        try:
            events = json.loads(self.output.read_text())
        except (OSError, ValueError) as error:
            return self._failed("died", f"left no readable output ({error})")
        log = self._log("stdout.txt")
        samples, errors = _counts(log)
        self.result = SamplerResult(MEASURED, None, self._command, events, samples, errors, list(self._marks),
                                    self.rate, self.main_thread, _behind_s(log))
        return self.result
