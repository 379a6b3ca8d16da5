"""The sweep driver's judgement of its points (utils/commands/sweep/driver.py): a failed point's reason from the end
of its error output or its exit, and a point failed when one of its rounds failed."""
from utils.commands.sweep.driver import exit_reason, stderr_reason
from utils.commands.sweep.driver import PointResult, RoundRun
from utils.commands.sweep.plan import expand


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
