"""The camera scenario's settings, typed from the config's sections."""
from utils.config.schema import config_for
from utils.scenarios.cameras.board import DROP, QUEUE, WAIT, BusyPolicy
from utils.scenarios.cameras.settings import LAYER_BATCHES, camera_settings


def _settings(**sections):
    config = config_for("yolov7-tiny", benchmark={"scenario": "cameras"}, **sections)
    return camera_settings(config.cameras, config.dataset, config.benchmark)


def test_copies_of_dataset_path_each_named_by_its_key():
    settings = _settings(cameras={"count": 3})
    assert settings.locations == (".",) * 3 and settings.keys == ("dataset.path",) * 3
    assert settings.busy == BusyPolicy(DROP) and settings.layer_batches == LAYER_BATCHES


def test_listed_sources_and_the_stream_and_decoder_settings():
    settings = _settings(cameras={"sources": ["a.mp4", "rtsp://cam/1"], "when_busy": QUEUE, "queue_frames": 3,
                                  "fps": 5.0, "read_timeout_s": 2.0, "reconnects": 1, "decoder_threads": 2},
                         dataset={"path": ".", "batch_size": 4, "max_pixels": 1000})
    assert settings.locations == ("a.mp4", "rtsp://cam/1")
    assert settings.keys == ("cameras.sources[0]", "cameras.sources[1]")
    twice = _settings(cameras={"sources": ["a.mp4", "rtsp://cam/1"], "count": 2})
    assert twice.locations == ("a.mp4", "a.mp4", "rtsp://cam/1", "rtsp://cam/1")
    assert settings.busy == BusyPolicy(QUEUE, 3) and settings.batch_size == 4
    assert settings.decode.selection.fps == 5.0 and settings.decode.threads == 2 and settings.decode.max_pixels == 1000
    assert settings.stream.read_timeout_s == 2.0 and settings.stream.reconnects == 1


def test_a_file_not_played_in_real_time_waits_for_the_detector():
    settings = _settings(cameras={"realtime": False}, dataset={"path": ".", "batch_size": 2})
    assert settings.policy(arrives=False) == BusyPolicy(WAIT, 2)
    assert settings.policy(arrives=True) == BusyPolicy(DROP)
