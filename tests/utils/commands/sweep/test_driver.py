"""The sweep driver's judgement of its points (utils/commands/sweep/driver.py): a failed point's reason from the end
of its error output or its exit, a point failed when one of its rounds failed, and a point killed by a signal read
for where it holds."""
from tests.support.killed_runs import KILLED_STEPS, killed_directory, steps_text
from utils.commands.sweep.driver import PointResult, RoundRun, exit_reason, settle_run, stderr_reason
from utils.commands.sweep.plan import Point, expand
from utils.launchers.base import PointOutcome, Stops
from utils.storage.finished_run import FinishedRun


def test_a_failed_point_keeps_the_end_of_its_error_output():
    stderr = "loading...\nTraceback (most recent call last):\n  File x\n  File y\n  File z\nRuntimeError: boom\n"
    assert stderr_reason(stderr) == "RuntimeError: boom"
    assert stderr_reason("noise\nerror: invalid configuration:\n  dataset.limit: bad\n") == (
        "error: invalid configuration: dataset.limit: bad")
    assert exit_reason(-9, "") == "killed by SIGKILL: no error output"
    assert exit_reason(2, "error: missing file").startswith("cannot run (exit 2): error: missing file")


def test_a_point_fails_when_one_of_its_rounds_failed(tmp_path):
    _, points = expand(["k=a"])
    result = PointResult(points[0], [RoundRun(1, tmp_path / "r1"), RoundRun(2, tmp_path / "r2")])
    result.runs[0].status = "complete"
    result.settle()
    assert result.status == "pending"  # round 2 has not run yet
    result.runs[1].status, result.runs[1].reason = "failed", "crashed (exit 139)"
    result.settle()
    assert result.status == "failed" and result.reason == "round 2: crashed (exit 139)"
    assert result.figures is None


def test_a_sweep_point_killed_by_a_signal_says_where_it_holds_and_shows_its_batches_unranked(tmp_path):
    folder = killed_directory(tmp_path / "point", steps_text(KILLED_STEPS))
    point = Point("point", (("benchmark.repeats", "3"),))
    result = PointResult(point, [RoundRun(1, folder)])
    settle_run(tmp_path, point, result.runs[0], PointOutcome(-9), Stops())
    result.settle()
    assert result.status == "failed"
    assert result.reason == ("killed by SIGKILL: no error output; " + FinishedRun(folder).killed_note())
    assert "timed pass 1, batch 1 (2 timed batch(es) in all)" in result.reason
    assert result.figures_row["p50_ms_per_image"] == 2.5  # (2 + 3) / 2 ms per image, from its two timed batches
    assert result.figures is None  # figures the answer could rank: none


def test_a_sweep_point_that_failed_on_its_own_is_not_read_as_killed(tmp_path):
    folder = killed_directory(tmp_path / "point", steps_text(KILLED_STEPS))
    point = Point("point", (("benchmark.repeats", "3"),))
    run = RoundRun(1, folder)
    settle_run(tmp_path, point, run, PointOutcome(1, stderr="error: disk full"), Stops())
    assert run.status == "failed" and "killed" not in run.reason and run.figures_row == {}
