"""Renamed config keys (utils/config/renamed_keys.py): found in config data, and moved to their new names."""
import pytest

from tests.support.paths import TINY_CONFIG as CONFIG
from utils.config.renamed_keys import RENAMED, renamed_in, with_new_names
from utils.config.schema import ConfigError, load_config


def test_old_keys_are_found_and_moved_and_a_new_key_already_there_wins():
    data = {"preprocess": {"min_size": 480, "img_size": 512}, "postprocess": {"box_score_thresh": 0.05},
            "model": {"arch": "fasterrcnn_resnet50_fpn"}}
    assert renamed_in(data) == [("preprocess.min_size", "preprocess.img_size"),
                                ("postprocess.box_score_thresh", "postprocess.conf_thres")]
    moved = with_new_names(data)
    assert moved["preprocess"] == {"img_size": 512} and moved["postprocess"] == {"conf_thres": 0.05}
    assert data["preprocess"]["min_size"] == 480  # the caller's data is left as it was
    assert with_new_names("not a mapping") == "not a mapping" and renamed_in(None) == []
    assert all(old.split(".")[0] == new.split(".")[0] for old, new in RENAMED.items())


@pytest.mark.parametrize("old, new, value", [
    ("preprocess.min_size", "preprocess.img_size", "480"), ("postprocess.box_score_thresh", "postprocess.conf_thres",
                                                            "0.05"),
    ("postprocess.box_nms_thresh", "postprocess.iou_thres", "0.5"),
    ("postprocess.detections_per_img", "postprocess.max_det", "100")])
def test_an_old_key_name_ends_with_the_new_one(old, new, value):
    with pytest.raises(ConfigError, match=f"{old} is now {new}.*--set {new}={value}"):
        load_config(CONFIG, ["model.arch=fasterrcnn_resnet50_fpn", "preprocess.img_size=null", f"{old}={value}"])
