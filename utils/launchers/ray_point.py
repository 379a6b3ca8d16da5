"""What runs on a Ray node for one sweep point: the normal benchmark.py, its run directory written to a temporary
folder there and handed back to the driver as a tar archive (no shared filesystem is assumed); the folder is
removed afterwards. Standard library only: this module is shipped to the nodes by value, so a node needs the
project's files only at the paths the command names.
"""
from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile

# What a Ray worker's environment adds to the one `ray start` had: the point must run as if started by hand
# (OMP_NUM_THREADS above all, which Ray sets to the task's CPUs).
RAY_WORKER_VARIABLES = ("OMP_NUM_THREADS", "RAY_JOB_ID", "RAY_RAYLET_PID", "SPT_NOENV", "PYTHONBREAKPOINT")
PR_SET_PDEATHSIG = 1
FOLDER_PREFIX = "detbench-point-"  # then the worker's pid: a folder whose worker is gone was left by a killed task
_FOLDER = re.compile(re.escape(FOLDER_PREFIX) + r"(\d+)-")


def point_environment(worker: dict, raylet: dict | None) -> dict:
    """The worker's environment without Ray's additions; a variable the raylet itself had keeps its value."""
    environment = dict(worker)
    for key in RAY_WORKER_VARIABLES:
        environment.pop(key, None)
        if raylet and key in raylet:
            environment[key] = raylet[key]
    return environment


def raylet_environment(pid: str | None) -> dict | None:
    try:
        with open(f"/proc/{int(pid)}/environ", "rb") as handle:
            pairs = handle.read().decode(errors="replace").split("\0")
    except (TypeError, ValueError, OSError):
        return None
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def _as_if_started_by_hand() -> None:
    """In the point's process before it starts: no signal blocked (Ray's worker blocks some, and a blocked SIGINT
    would never reach the point), and killed when the task's worker dies (a forced cancel, a dying node), so it
    never goes on measuring alone."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def remove_abandoned_folders(parent: str) -> list[str]:
    """Point folders whose task was killed before it could remove them (a forced cancel, a node that died and
    came back); a folder whose worker still lives belongs to a running point and stays."""
    removed = []
    for name in os.listdir(parent):
        match = _FOLDER.match(name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:  # alive, someone else's
            continue
        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        removed.append(name)
    return removed


def pack(folder: str, name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(os.path.join(folder, name), arcname=name)
    return buffer.getvalue()


def run_point(arguments: list[str], run_id: str, script: str, cwd: str) -> dict:
    """benchmark.py with `arguments` (which set run.id to `run_id`) from `cwd`; a stop (the driver cancelling
    the task, which Ray delivers to the worker's SIGINT handler) is passed on to it so it writes what it
    measured."""
    host = socket.gethostname()
    for path, what in ((script, "benchmark.py"), (cwd, "the folder the sweep was started from")):
        if not os.path.exists(path):
            return {"returncode": None,
                    "lost": f"{what} {path} does not exist on node {host}: every node needs the project checkout "
                            "at the same path as the machine that starts the sweep"}
    stop = _StopForwarding()
    remove_abandoned_folders(tempfile.gettempdir())
    folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
    try:
        command = [sys.executable, script, *arguments, "--set", f"run.output_dir={json.dumps(folder)}"]
        environment = point_environment(dict(os.environ), raylet_environment(os.environ.get("RAY_RAYLET_PID")))
        with stop.installed(), tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
            stop.child = subprocess.Popen(command, cwd=cwd, env=environment, stdin=subprocess.DEVNULL,
                                          stdout=stdout, stderr=stderr, text=True, preexec_fn=_as_if_started_by_hand)
            if stop.received:  # arrived before the point started: pass it on now
                stop.child.send_signal(signal.SIGINT)
            returncode = _wait(stop.child)
            stdout.seek(0)
            stderr.seek(0)
            output, errors = stdout.read(), stderr.read()
            run_dir = os.path.join(folder, run_id)
            archive = pack(folder, run_id) if os.path.isdir(run_dir) else None
        return {"returncode": returncode, "stdout": output, "stderr": errors, "archive": archive}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait(child: subprocess.Popen) -> int:
    # Ray delivers a cancel as an interrupt of the main thread, which a blocking wait would not notice.
    while True:
        try:
            return child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue


class _StopForwarding:
    """From before the point starts until its files are packed, SIGINT only reaches the point."""

    def __init__(self):
        self.child: subprocess.Popen | None = None
        self.received = False

    def _handle(self, number: int, _frame) -> None:
        self.received = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(number)

    @contextlib.contextmanager
    def installed(self):
        try:
            previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: a stop then ends the task without its files
            previous = None
        try:
            yield self
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
