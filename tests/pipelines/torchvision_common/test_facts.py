"""What torchvision's detectors share as data (pipelines/torchvision_common/facts.py): a builder's defaults under
the shared names, the largest input it makes and what it refuses, and every row of the rcnn and dense families the
defaults torchvision's own builder sets."""
from types import SimpleNamespace

import pytest
import torch

from pipelines.dense import facts as dense_facts
from pipelines.rcnn import facts as rcnn_facts
from pipelines.settings import NO_CAP
from pipelines.torchvision_common.facts import DEPLOYED_CONF_THRES, Builder, largest_input_area, settings_problem
from tests.support.paths import ROOT
from utils.config.schema import ConfigError, load_config

FPN = Builder(min_size=800, max_size=1333, score_thresh=0.05, nms_thresh=0.5, detections_per_img=300,
              topk_candidates=1000)
SQUARE = Builder(300, 300, score_thresh=0.01, nms_thresh=0.45, detections_per_img=200, fixed_size=True,
                 size_divisible=1, smallest_input=268)


def test_a_builder_deploys_at_the_shared_cut_and_evaluates_at_its_own():
    defaults = FPN.defaults(("JoinedOutputs",))
    assert defaults.postprocess == {"conf_thres": DEPLOYED_CONF_THRES, "iou_thres": 0.5, "max_det": 300,
                                    "topk_candidates": 1000}
    assert defaults.preprocess["img_size"] == 800 and defaults.preprocess["max_size"] == 1333
    evaluation = defaults.evaluation
    assert (evaluation.conf_thres, evaluation.iou_thres, evaluation.max_det, evaluation.multi_label) == (
        0.05, 0.5, 300, None)
    assert defaults.keep_float == ("JoinedOutputs",)


def test_the_largest_input_and_what_a_fixed_square_refuses():
    assert largest_input_area(FPN, SimpleNamespace(img_size=800, max_size=1333)) == 800 * 1333
    assert largest_input_area(SQUARE, SimpleNamespace(img_size=300, max_size=300)) == 300 * 300
    ok = SimpleNamespace(img_size=300, max_size=300, std=[1.0, 1.0, 1.0])
    assert settings_problem(SQUARE, ok) is None
    assert "at least 268" in settings_problem(SQUARE, SimpleNamespace(img_size=200, max_size=300, std=[1.0] * 3))
    assert "max_size does not apply" in settings_problem(SQUARE, SimpleNamespace(img_size=300, max_size=640,
                                                                                 std=[1.0] * 3))
    assert "must be positive" in settings_problem(FPN, SimpleNamespace(img_size=800, max_size=1333,
                                                                       std=[0.2, 0.0, 0.2]))


def test_no_cap_on_the_detections_kept_is_refused_naming_the_builders_own():
    assert SQUARE.defaults().keeps_all is False  # torchvision's heads keep at most detections_per_img
    with pytest.raises(ConfigError, match=r"postprocess.max_det 0 \(no cap\) does not apply to model.arch "
                                          r"ssdlite320_mobilenet_v3_large: .* \(its own: 300\)"):
        load_config(ROOT / "configs" / "samples_ssdlite.yaml", [f"postprocess.max_det={NO_CAP}"])


@pytest.mark.parametrize("facts", [rcnn_facts, dense_facts], ids=lambda f: f.NAME)
def test_each_torchvision_row_is_its_builders_own_defaults(facts):
    from torchvision.models import detection
    for arch, builder in facts.BUILDERS.items():
        with torch.device("meta"):  # the builder's settings without a second of weight initialisation
            model = getattr(detection, arch)(weights=None, weights_backbone=None)
        heads = getattr(model, "roi_heads", model)
        transform = model.transform
        assert (builder.score_thresh, builder.nms_thresh, builder.detections_per_img) == (
            heads.score_thresh, heads.nms_thresh, heads.detections_per_img), arch
        assert (builder.min_size, builder.max_size, builder.size_divisible) == (
            transform.min_size[-1], transform.max_size, transform.size_divisible), arch
        assert list(builder.mean) == transform.image_mean and list(builder.std) == pytest.approx(transform.image_std)
        assert builder.fixed_size == (transform.fixed_size is not None), arch
        assert builder.topk_candidates == getattr(model, "topk_candidates", None), arch
