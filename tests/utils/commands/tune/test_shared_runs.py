"""Runs that share one process (utils/commands/tune/shared_runs.py): each marked as it ends, the process's outcome split
back into one per run; and which runs of a round the race puts in one process (utils/commands/tune/driver.py)."""
import json
from types import SimpleNamespace

from utils.launchers.base import PointOutcome
from utils.commands.tune.driver import Race, Tune
from utils.commands.tune.goals import Goal
from utils.commands.tune.shared_runs import MARKER, runs_main, split_outcome
from utils.commands.tune.space import Candidate
from utils.commands.tune.state import Entry, Run


def test_runs_each_with_the_common_settings_and_marks_each(capsys):
    seen = []

    def run(arguments):
        seen.append(arguments)
        return 0

    status = runs_main([json.dumps([["a", ["--config", "x"]], ["b", ["--config", "y"]]]), "--set", "o=1"], run)
    out = capsys.readouterr()
    assert status == 0
    assert seen == [["--config", "x", "--set", "o=1"], ["--config", "y", "--set", "o=1"]]
    assert [line.split("\t")[:3] for line in out.out.splitlines()] == [[MARKER, "a", "0"], [MARKER, "b", "0"]]
    assert out.err.count(MARKER) == 2


def test_a_stopped_run_ends_the_process_with_its_status(capsys):
    status = runs_main([json.dumps([["a", []], ["b", []]])], lambda arguments: 130)
    assert status == 130
    assert capsys.readouterr().out.count(MARKER) == 1


def test_the_outcome_splits_into_each_runs_output_status_and_seconds():
    stdout = f"a says\n{MARKER}\ta\t0\t2.500\nb says\n{MARKER}\tb\t2\t1.000\n"
    stderr = f"{MARKER}\ta\t0\t2.500\nerror: b is refused\n{MARKER}\tb\t2\t1.000\n"
    split = split_outcome(["a", "b"], PointOutcome(0, stdout, stderr))
    first, seconds = split["a"]
    assert (first.returncode, first.stdout, seconds) == (0, "a says\n", 2.5)
    refused, _ = split["b"]
    assert refused.returncode == 2 and refused.stderr == "error: b is refused\n"


def test_runs_after_a_stop_are_stopped_and_after_a_crash_the_crashed_one_carries_it():
    marked = f"{MARKER}\ta\t0\t1.0\n"
    stopped = split_outcome(["a", "b"], PointOutcome(130, marked, ""))
    assert stopped["b"][0].returncode is None and stopped["b"][0].stopped
    crashed = split_outcome(["a", "b", "c"], PointOutcome(-9, marked, "Traceback ...\nSegfault"))
    assert crashed["b"][0].returncode == -9 and "Segfault" in crashed["b"][0].stderr
    assert crashed["c"][0].returncode is None and not crashed["c"][0].stopped
    assert "ended before it (b)" in crashed["c"][0].lost


def _candidate(batch, threads, pinning):
    return Candidate((("runtime.backend", "torch"), ("runtime.precision", "fp32"), ("dataset.batch_size", batch),
                      ("runtime.threads", threads), ("runtime.pinning", pinning)))


def _grouped(goal):
    tune = Tune.__new__(Tune)
    entries = [Entry(_candidate(batch, threads, pinning)) for threads, pinning in (("1", "false"), ("2", "true"))
               for batch in ("1", "2")]
    tune.race, tune.request = Race(entries), SimpleNamespace(goal=goal)
    runs = [Run(entry.name, 1, False, f"{entry.name},round=1") for entry in entries]
    return [[run.candidate for run in group] for group in tune._groups(runs)]


def test_batch_sizes_of_one_schedule_share_a_process_pinned_or_not():
    groups = _grouped(Goal("latency"))
    # A pinned run gives its cores back as it ends (tests/pipelines/runtimes/test_streams_pinning.py runs two in one process).
    assert groups == [[_candidate("1", "1", "false").name, _candidate("2", "1", "false").name],
                      [_candidate("1", "2", "true").name, _candidate("2", "2", "true").name]]
    assert all(len(group) == 1 for group in _grouped(Goal("throughput")))  # LoadGen's state is the process's
