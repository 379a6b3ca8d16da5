"""int8's calibration images (utils/checks/int8/calibration_inputs.py) on the trained shapes model: the network inputs the
run's own preprocessing makes, with a digest that follows the images and the preprocessing."""
from __future__ import annotations

import pytest
import torch

from datasets.image_folder import find_images
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo import family
from tests.support.int8_models import CALIBRATION_IMAGES, calibrating
from tests.support.paths import SHAPES
from utils.config.schema import config_for
from utils.checks.int8.calibration_inputs import calibration_inputs

pytestmark = pytest.mark.slow  # the shapes model and its images, preprocessed three times

PRE, POST = config_for("yolov7-tiny", preprocess={"img_size": 160}).preprocess, config_for("yolov7-tiny").postprocess


@pytest.fixture(scope="module")
def network():
    return family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)


@pytest.fixture(scope="module")
def paths():
    return find_images(SHAPES / "images")


@pytest.fixture(scope="module")
def calibration(network, paths):
    return calibration_inputs(family, network, PRE, POST, paths, calibrating())


def test_calibration_inputs_are_the_pipelines_network_inputs(network, paths, calibration):
    inputs = list(calibration.inputs())
    assert len(inputs) == calibration.images == CALIBRATION_IMAGES
    pipeline = family.build_pipeline(network, PreparedForward(lambda batch: batch, None), PRE, POST)
    import cv2
    expected = pipeline.preprocess([cv2.imread(str(paths[0]))]).tensor
    assert torch.equal(torch.from_numpy(inputs[0]), expected)
    # the digest follows the images and the preprocessing
    other = calibration_inputs(family, network, config_for("yolov7-tiny", preprocess={"img_size": 192}).preprocess,
                               POST, paths, calibrating(8))
    fewer = calibration_inputs(family, network, PRE, POST, paths, calibrating(4))
    assert len({calibration.digest, other.digest, fewer.digest}) == 3
