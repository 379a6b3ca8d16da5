"""A finished run directory read back (utils/storage/finished_run.py)."""
import yaml

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
