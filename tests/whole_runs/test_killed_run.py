"""A killed run's directory as tune's resume reads it (whole runs killed for real are in test_fault_injection.py; the
journal, a killed run read back and a sweep's killed point are tested beside their modules: utils/measure/steps/,
utils/storage/test_finished_run.py, utils/commands/sweep/test_driver.py)."""
import json
from types import SimpleNamespace

from tests.support.killed_runs import KILLED_STEPS, killed_directory, steps_text
from utils.storage.finished_run import FinishedRun
from utils.commands.tune.driver import Tune
from utils.commands.tune.state import Run


def test_tunes_resume_marks_a_run_killed_with_the_race_stopped_saying_where_it_holds(tmp_path):
    killed_directory(tmp_path / "killed", steps_text(KILLED_STEPS))
    written = killed_directory(tmp_path / "written", steps_text(KILLED_STEPS))
    (written / "summary.json").write_text(json.dumps({"status": "complete", "stop_reason": None}))
    race = SimpleNamespace(directory=SimpleNamespace(path=tmp_path))
    runs = {name: Run("torch fp32", 1, False, name) for name in ("killed", "written", "absent")}
    for run in runs.values():
        Tune._settle_killed(race, run)
    assert {run.status for run in runs.values()} == {"stopped"}
    assert runs["killed"].reason == "killed with the race; " + FinishedRun(tmp_path / "killed").killed_note()
    assert runs["written"].reason == "the race was killed as it ended (complete)"
    assert runs["absent"].reason.startswith("killed with the race before it wrote anything readable (")
