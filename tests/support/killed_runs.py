"""Run directories as a killed run leaves them: summary.json still saying running, and steps_timer.csv holding the
batches it finished (tests of utils/storage/finished_run.py and of the commands that read such runs)."""
import csv
import io
import json

from utils.record.steps import STEP_TIMER_COLUMNS


def killed_directory(folder, steps_text):
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"status": "running", "stop_reason": None}))
    (folder / "steps_timer.csv").write_text(steps_text)
    return folder


def steps_text(batches):
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(STEP_TIMER_COLUMNS)
    for kind, index, number, ms in batches:
        writer.writerow(["pipeline", "run", kind, index, number, 2, ms, kind == "warmup", 0.0, ms / 1e3, False])
    return text.getvalue()


KILLED_STEPS = [("warmup", 0, 0, 9.0), ("timed", 0, 0, 4.0), ("timed", 0, 1, 6.0)]
