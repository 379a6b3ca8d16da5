"""What the R-CNN family states about itself (pipelines/rcnn/facts.py), as the config asks it: its own keys refused
for another family, config.yaml listing only its keys at its builders' defaults, and the exported runtimes refused
because its forward is timed in parts."""
import pytest
import yaml

from benchmark import main
from pipelines.rcnn import facts as rcnn_facts
from pipelines.settings import ForwardTiming
from tests.support.paths import SAMPLES
from utils.config.schema import ConfigError, config_to_yaml, load_config


ARCH = "fasterrcnn_mobilenet_v3_large_fpn"


@pytest.mark.parametrize("arch, key, owner", [
    (ARCH, "postprocess.agnostic=true", "yolo and exported families"),
    ("yolov7-tiny", "postprocess.rpn_pre_nms_top_n=320", "rcnn family"),
    ("yolov7-tiny", "preprocess.max_size=320", "rcnn and dense families"),
])
def test_a_key_of_another_family_is_refused_naming_its_family(tmp_path, capsys, arch, key, owner):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"path": str(SAMPLES)}, "model": {"arch": arch}}))
    with pytest.raises(ConfigError, match=f"{key.split('=')[0]} belongs to the {owner}"):
        load_config(config, [key])
    assert main(["--config", str(config), "--set", key]) == 2
    assert "belongs to the" in capsys.readouterr().err


def test_the_run_config_lists_only_the_keys_of_its_family(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"path": str(SAMPLES)}, "model": {"arch": ARCH},
                                      "preprocess": {"img_size": 320}}))
    written = yaml.safe_load(config_to_yaml(load_config(config)))
    assert written["preprocess"] == {"img_size": 320, "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225],
                                     "max_size": 1333}
    assert written["postprocess"] == {"conf_thres": 0.5, "iou_thres": 0.5, "max_det": 100, "rpn_pre_nms_top_n": 1000,
                                      "rpn_post_nms_top_n": 1000}


def test_exported_runtimes_are_refused_for_this_family(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"path": str(SAMPLES)}, "model": {"arch": ARCH},
                                      "runtime": {"backend": "onnxruntime"}}))
    assert main(["--config", str(config)]) == 2
    assert "runtime.backend onnxruntime is not supported for this family (rcnn" in capsys.readouterr().err


def test_every_architecture_deploys_at_the_shared_cut_and_evaluates_at_its_builders():
    assert rcnn_facts.NAME == "rcnn" and rcnn_facts.FORWARD_TIMING == ForwardTiming.PARTS
    assert all(rcnn_facts.accepts(arch) for arch in rcnn_facts.ARCHS) and not rcnn_facts.accepts("yolov7")
    assert "maskrcnn_resnet50_fpn" in rcnn_facts.ARCHS and rcnn_facts.ARCH_FILES == ()
    defaults = rcnn_facts.defaults(ARCH)
    assert defaults.postprocess == {"conf_thres": 0.5, "iou_thres": 0.5, "max_det": 100}
    assert (defaults.evaluation.conf_thres, defaults.evaluation.multi_label) == (0.05, None)
    assert defaults.preprocess["img_size"] == 800 and defaults.keep_float == ()
    assert rcnn_facts.smallest_input(ARCH) == 32
    assert set(rcnn_facts.Postprocess.model_fields) == {"rpn_pre_nms_top_n", "rpn_post_nms_top_n"}
