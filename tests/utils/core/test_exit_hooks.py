"""Leaving past a thread left running (utils/core/exit_hooks.py): the status comes back while nothing is left; with
a thread alive, the process ends with that status, its console flushed, and without the interpreter's exit."""
import subprocess
import sys

from tests.support.paths import ROOT
from utils.core import exit_hooks


def test_nothing_left_running_gives_the_status_back(monkeypatch):
    monkeypatch.setattr(exit_hooks, "_left_running", [])
    exit_hooks.left_running(lambda: False)
    assert exit_hooks.leave(3) == 3


def test_a_thread_left_running_ends_the_process_with_its_status_once_written():
    script = ("import atexit, threading; from utils.core import exit_hooks; "
              "assert exit_hooks.leave(3) == 3; "
              "stuck = threading.Thread(target=threading.Event().wait, daemon=True); stuck.start(); "
              "exit_hooks.left_running(stuck.is_alive); atexit.register(print, 'the interpreter ran its exit'); "
              "print('written', flush=False); exit_hooks.leave(2)")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "written\n", done.stderr[-2000:]
