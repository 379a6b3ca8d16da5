"""The run's runtime prepared from the config (utils/assembly/runtime_setup.py): int8's calibration images kept
apart from the scored ones, and its accuracy control attached only where the config asks for it, judged against
the labels of the calibration images where they hold objects."""
from __future__ import annotations

import pytest

from datasets.image_folder import DatasetBatches, find_images
from datasets.labels import load_ground_truth
from pipelines.yolo import family
from tests.support.paths import SHAPES
from utils.config.schema import config_for
from utils.assembly import runtime_setup
from utils.assembly.composition import run_sections

SIZE = 96


class Prepared:
    """Stands in for a runtime: keeps what it was built with."""

    streams = 1

    def __init__(self, **options):
        self.options = options

    def prepare(self, network, example):
        return lambda batch: batch

    def settings(self):
        return {}


@pytest.fixture()
def built(monkeypatch):
    made = []

    def build(backend, **options):
        made.append(Prepared(**options))
        return made[-1]

    monkeypatch.setattr(runtime_setup, "build_runtime", build)
    return made


@pytest.fixture(scope="module")
def network():
    return family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)


def int8_sections(**calibration):
    """The sections of an int8 run, as the composition root hands them over."""
    runtime = {"backend": "openvino", "precision": "int8", "calibration": {"images": 4, **calibration}}
    return run_sections(config_for("yolov7-tiny", preprocess={"img_size": SIZE},
                                   dataset={"path": str(SHAPES / "images")}, runtime=runtime))


def test_int8_calibrates_on_images_the_run_never_scores_and_attaches_its_control(built, network):
    paths = find_images(SHAPES / "images")[:10]
    truth = load_ground_truth(SHAPES / "labels", SHAPES / "images", paths, network.class_names)
    prepared = runtime_setup.prepare_runtime(int8_sections(), family, network, DatasetBatches(paths, 1),
                                             lambda line: None, truth)
    calibration = built[0].options["calibration"]
    assert prepared.scored.items == paths[:6] and prepared.calibration["images"] == 4
    assert calibration.images == 4 and calibration.control is not None
    assert calibration.control.figure == "mAP@0.5:0.95 drop against the labels"
    assert calibration.control.images == 4 and calibration.control.target == pytest.approx(0.005)


def test_without_labels_the_mirror_views_judge_and_off_means_plain(built, network):
    paths = find_images(SHAPES / "images")[:10]
    runtime_setup.prepare_runtime(int8_sections(), family, network, DatasetBatches(paths, 1), lambda line: None)
    assert "mirror view" in built[0].options["calibration"].control.figure
    runtime_setup.prepare_runtime(int8_sections(accuracy_control=False), family, network, DatasetBatches(paths, 1),
                                  lambda line: None)
    assert built[1].options["calibration"].control is None
