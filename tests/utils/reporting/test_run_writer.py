"""A run record into the files of outputs/<run_id>/ (utils/reporting/run_writer.py): at the start config.yaml, env.json
and summary.json saying running; at the end the step tables, every measurement's tables, report.html when asked, and
summary.json last, describing them. The page and the figures themselves: test_run_report.py, test_summary.py."""
import json

import pandas as pd

from utils.record.run_record import RunIdentity, RunRecord, Status
from utils.record.steps import STEP_TIMER_COLUMNS, PassKind, StepRecord
from utils.reporting.run_writer import RunWriter
from utils.storage.run_directory import RunDirectory


def identity() -> RunIdentity:
    return RunIdentity(run_id="w", config_file="x.yaml", family="yolo", arch="yolov7-tiny",
                       weights="random (seed 0)", random_weights=True, seed=0, img_size=160, batch_size=1,
                       runtime={"backend": "torch", "precision": "fp32"}, step_order=("pipeline", "forward"))


def claimed(tmp_path, name="w") -> RunDirectory:
    run_dir = RunDirectory(tmp_path, name)
    run_dir.create()
    return run_dir


def test_the_start_writes_the_config_the_environment_and_a_running_summary(tmp_path):
    run_dir = claimed(tmp_path)
    writer = RunWriter(run_dir, plots=False)
    writer.write_start(RunRecord(identity()), "model:\n  arch: yolov7-tiny\n", {"cpu": "test"})
    assert run_dir.file("config.yaml").read_text() == "model:\n  arch: yolov7-tiny\n"
    assert json.loads(run_dir.file("env.json").read_text()) == {"cpu": "test"}
    assert json.loads(run_dir.file("summary.json").read_text())["status"] == "running"
    assert writer.config == {"model": {"arch": "yolov7-tiny"}} and writer.environment == {"cpu": "test"}


def test_the_end_writes_the_tables_then_summary_json_and_no_layer_files_without_layer_timing(tmp_path):
    run_dir = claimed(tmp_path)
    record = RunRecord(identity())
    record.steps_origin_ns = 0
    record.steps = [StepRecord(step, parent, PassKind.TIMED, 0, batch, 1, batch * 10**7, batch * 10**7 + 5 * 10**6)
                    for batch in range(3) for step, parent in (("pipeline", None), ("forward", "pipeline"))]
    record.finish(Status.COMPLETE)
    summary = RunWriter(run_dir, plots=False, report=False).write_record(record)
    steps = pd.read_csv(run_dir.file("steps_timer.csv"))
    assert list(steps.columns) == list(STEP_TIMER_COLUMNS) and len(steps) == 6
    assert set(pd.read_csv(run_dir.file("steps_summary.csv"))["step"]) == {"pipeline", "forward"}
    assert json.loads(run_dir.file("summary.json").read_text()) == json.loads(json.dumps(summary, default=str))
    assert summary["status"] == "complete" and "report" not in summary and "plots" not in summary
    assert not any(run_dir.file(name).exists() for name in ("layer_timer.csv", "report.html", "trace.json"))
