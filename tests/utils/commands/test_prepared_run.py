"""utils/commands/prepared_run.py: a command's runner prepared, then run; a mistake or a stop at either stage ends
as one line and its exit status."""
import pytest

from utils.commands.prepared_run import prepare_then_run
from utils.core.errors import ExitStatus, UsageError

STOPPED = "interrupted before the race started; nothing was run"


class Runner:
    def __init__(self, failing_in: str = "", stop: bool = False):
        self.failing_in, self.stop, self.ran = failing_in, stop, False

    def prepare(self):
        if self.stop:
            raise KeyboardInterrupt
        if self.failing_in == "prepare":
            raise UsageError("--config x.yaml: no such file")

    def run(self):
        if self.failing_in == "run":
            raise UsageError("the budget is spent")
        self.ran = True
        return 0


def test_a_prepared_runner_runs_and_its_status_is_the_commands():
    runner = Runner()
    assert prepare_then_run(lambda: runner, STOPPED) == 0 and runner.ran


@pytest.mark.parametrize("stage, said", [("prepare", "error: --config x.yaml: no such file"),
                                         ("run", "error: the budget is spent")])
def test_a_mistake_at_either_stage_is_one_line_and_exit_2(capsys, stage, said):
    runner = Runner(failing_in=stage)
    assert prepare_then_run(lambda: runner, STOPPED) == ExitStatus.USAGE and not runner.ran
    assert capsys.readouterr().err.strip() == said


def test_a_stop_while_preparing_says_nothing_was_run(capsys):
    runner = Runner(stop=True)
    assert prepare_then_run(lambda: runner, STOPPED) == ExitStatus.INTERRUPTED and not runner.ran  # Ctrl-C
    assert capsys.readouterr().err.strip() == STOPPED
