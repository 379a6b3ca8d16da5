"""A finished run directory read back (utils/storage/finished_run.py): a run killed before it wrote its record read as
killed up to its last whole batch, and a run written under old key names read under the new."""
import json

import yaml

from tests.support.killed_runs import killed_directory, steps_text

from utils.storage.finished_run import FinishedRun


def test_a_run_directory_written_under_the_old_names_reads_back_under_the_new(tmp_path):
    (tmp_path / "summary.json").write_text("{}")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "model": {"arch": "fasterrcnn_resnet50_fpn"},
        "preprocess": {"min_size": 480, "max_size": 800},
        "postprocess": {"box_score_thresh": 0.05, "box_nms_thresh": 0.5, "detections_per_img": 100}}))
    config = FinishedRun(tmp_path).config()
    assert config["preprocess"] == {"max_size": 800, "img_size": 480}
    assert config["postprocess"] == {"conf_thres": 0.05, "iou_thres": 0.5, "max_det": 100}


def test_a_killed_directory_reads_as_killed_up_to_its_last_whole_batch(tmp_path):
    """The journal of a run killed mid-write (a power cut) ends in a line cut short: it is left out."""
    whole = steps_text([("warmup", 0, 0, 9.0), ("timed", 0, 0, 4.0), ("timed", 0, 1, 6.0), ("timed", 1, 0, 5.0)])
    run = FinishedRun(killed_directory(tmp_path / "killed", whole + "pipeline,run,timed,1,1,2,7.2"))
    assert run.killed
    assert run.per_image_samples() == [2.0, 3.0, 2.5]
    assert run.holds_until() == "timed pass 2, batch 0 (3 timed batch(es) in all)"
    assert run.killed_note() == (f"{run.path} was killed before it wrote its record (summary.json still says "
                                 "running): its files hold what it measured up to the timed pass 2, batch 0 (3 "
                                 "timed batch(es) in all)")


def test_a_run_killed_before_its_first_batch_says_so(tmp_path):
    run = FinishedRun(killed_directory(tmp_path / "early", steps_text([])))
    assert run.killed and run.holds_until() == "before its first batch (no batch was timed)"
    (run.path / "steps_timer.csv").unlink()
    assert run.holds_until() == "before its first batch (no batch was timed)"


def test_a_finished_run_is_not_killed(tmp_path):
    folder = killed_directory(tmp_path / "done", steps_text([("timed", 0, 0, 4.0)]))
    (folder / "summary.json").write_text(json.dumps({"status": "interrupted", "stop_reason": "SIGHUP"}))
    assert not FinishedRun(folder).killed
