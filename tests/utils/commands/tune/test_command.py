"""`benchmark.py tune`'s bad input (utils/commands/tune/command.py): one message, exit status 2, nothing run."""
import pytest

from tests.support.paths import TINY_CONFIG
from utils.commands.tune.command import tune_main


@pytest.mark.parametrize("arguments, says", [
    (["--config", str(TINY_CONFIG), "--minutes", "0"], "--minutes 0: give a positive"),
    (["--config", str(TINY_CONFIG), "--rounds", "0"], "--rounds 0: give at least 1"),
    (["--config", str(TINY_CONFIG), "--goal", "server"], "--goal server needs --target-ms"),
    (["--config", str(TINY_CONFIG), "--target-ms", "50"], "--target-ms is for --goal server"),
    ([], "tune needs --config"),
    (["--resume", "/nonexistent/tune"], "no tune.json there"),
    (["--config", str(TINY_CONFIG), "--sweep", "runtime.threads=1,4096"], "runtime.threads=4096"),
    (["--config", str(TINY_CONFIG), "--sweep", "dataset.limit=" + ",".join(map(str, range(1, 5001)))],
     "more than 10,000"),
])
def test_bad_input_is_one_message_and_exit_2(arguments, says, capsys, tmp_path):
    status = tune_main([*arguments, "--set", f"run.output_dir={tmp_path}"] if "--config" in arguments
                       else arguments)
    error = capsys.readouterr().err
    assert status == 2
    assert says in error and "Traceback" not in error
    assert not any(tmp_path.iterdir())
