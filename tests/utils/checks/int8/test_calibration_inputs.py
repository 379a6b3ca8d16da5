"""utils.checks.int8.calibration_inputs on video frames: the frames chosen are decoded from their video and
preprocessed as the timed passes preprocess them, and the calibration's digest (its cache key) names each frame by
its video's digest and its index, so other frames of the same file calibrate anew."""
import numpy as np
import pytest

from datasets.sources.dataset import find_dataset
from datasets.sources.frame_batches import item_batches
from datasets.sources.settings import DecodeSettings
from pipelines.cache_keys import file_digest
from pipelines.yolo import family
from tests.support.clips import moving_shapes, write_clip
from utils.checks.int8.calibration_inputs import calibration_inputs, item_digest
from utils.config.schema import CalibrationSection, config_for

CONFIG = config_for("yolov7-tiny", preprocess={"img_size": 96})
pytestmark = pytest.mark.slow  # a network with calibrated random weights, built three times


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    clip = write_clip(tmp_path_factory.mktemp("clip") / "cam.mp4", moving_shapes(128, 96, 6, photo=None))
    return item_batches(find_dataset(clip, None, DecodeSettings()), 2)


def test_frames_calibrate_through_the_runs_preprocessing_keyed_by_video_and_index(frames):
    network = family.load_network("yolov7-tiny", None, seed=0)
    chosen = frames.of(frames.items[3:])
    calibration = calibration_inputs(family, network, CONFIG.preprocess, CONFIG.postprocess, chosen,
                                     CalibrationSection(images=2, keep_float=[]))
    inputs = list(calibration.inputs())
    assert calibration.images == 2 and len(inputs) == 2
    assert all(isinstance(array, np.ndarray) and array.shape[:2] == (1, 3) for array in inputs)
    video = frames.items[0].video
    assert item_digest(frames.items[4]) == f"{file_digest(video)}@4"
    other = calibration_inputs(family, network, CONFIG.preprocess, CONFIG.postprocess, frames.of(frames.items[:2]),
                               CalibrationSection(images=2, keep_float=[]))
    again = calibration_inputs(family, network, CONFIG.preprocess, CONFIG.postprocess, chosen,
                               CalibrationSection(images=2, keep_float=[]))
    assert other.digest != calibration.digest == again.digest
