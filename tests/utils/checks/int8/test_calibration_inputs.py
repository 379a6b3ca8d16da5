"""int8's calibration inputs (utils/checks/int8/calibration_inputs.py): on the trained shapes model, the network
inputs the run's own preprocessing makes, with a digest that follows the images and the preprocessing; on video
frames, the frames chosen decoded from their video, the digest (the cache key) naming each by its video's digest and
its index, so other frames of the same file calibrate anew."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from datasets.image_folder import DatasetBatches, find_images
from datasets.sources.dataset import find_dataset
from datasets.sources.frame_batches import item_batches
from datasets.sources.settings import DecodeSettings
from pipelines.cache_keys import file_digest
from pipelines.runtimes.base import PreparedForward
from pipelines.yolo import family
from tests.support.clips import moving_shapes, write_clip
from tests.support.int8_models import CALIBRATION_IMAGES, calibrating
from tests.support.paths import SHAPES
from utils.checks.int8.calibration_inputs import calibration_inputs, item_digest
from utils.config.schema import CalibrationSection, config_for

pytestmark = pytest.mark.slow  # the shapes model and its images, preprocessed three times

PRE, POST = config_for("yolov7-tiny", preprocess={"img_size": 160}).preprocess, config_for("yolov7-tiny").postprocess
SMALL = config_for("yolov7-tiny", preprocess={"img_size": 96}).preprocess


@pytest.fixture(scope="module")
def network():
    return family.load_network("yolov7-tiny", str(SHAPES / "yolov7-tiny-shapes.pt"), seed=0)


@pytest.fixture(scope="module")
def paths():
    return find_images(SHAPES / "images")


@pytest.fixture(scope="module")
def calibration(network, paths):
    return calibration_inputs(family, network, PRE, POST, DatasetBatches(paths, 1), calibrating())


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    clip = write_clip(tmp_path_factory.mktemp("clip") / "cam.mp4", moving_shapes(128, 96, 6, photo=None))
    return item_batches(find_dataset(clip, None, DecodeSettings()), 2)


def test_calibration_inputs_are_the_pipelines_network_inputs(network, paths, calibration):
    inputs = list(calibration.inputs())
    assert len(inputs) == calibration.images == CALIBRATION_IMAGES
    pipeline = family.build_pipeline(network, PreparedForward(lambda batch: batch, None), PRE, POST)
    import cv2
    expected = pipeline.preprocess([cv2.imread(str(paths[0]))]).tensor
    assert torch.equal(torch.from_numpy(inputs[0]), expected)
    # the digest follows the images and the preprocessing
    other = calibration_inputs(family, network, config_for("yolov7-tiny", preprocess={"img_size": 192}).preprocess,
                               POST, DatasetBatches(paths, 1), calibrating(8))
    fewer = calibration_inputs(family, network, PRE, POST, DatasetBatches(paths, 1), calibrating(4))
    assert len({calibration.digest, other.digest, fewer.digest}) == 3


def test_frames_calibrate_through_the_runs_preprocessing_keyed_by_video_and_index(network, frames):
    chosen = frames.of(frames.items[3:])
    calibration = calibration_inputs(family, network, SMALL, POST, chosen, CalibrationSection(images=2, keep_float=[]))
    inputs = list(calibration.inputs())
    assert calibration.images == 2 and len(inputs) == 2
    assert all(isinstance(array, np.ndarray) and array.shape[:2] == (1, 3) for array in inputs)
    video = frames.items[0].video
    assert item_digest(frames.items[4]) == f"{file_digest(video)}@4"
    other = calibration_inputs(family, network, SMALL, POST, frames.of(frames.items[:2]),
                               CalibrationSection(images=2, keep_float=[]))
    again = calibration_inputs(family, network, SMALL, POST, chosen, CalibrationSection(images=2, keep_float=[]))
    assert other.digest != calibration.digest == again.digest
