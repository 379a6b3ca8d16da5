"""The cameras built at start-up: a file's first frame decoded and its frames named by camera; every location
that cannot be read refused with the config key that named it; a real-time file with B-frames called out."""
import cv2
import numpy as np
import pytest

from datasets.dataset_root import DatasetError
from tests.support.clips import moving_shapes, write_clip
from tests.support.streams import free_port
from utils.config.schema import config_for
from utils.scenarios.cameras.settings import camera_settings
from utils.scenarios.cameras.sources import build_cameras, reorder_warning


def _cameras(**cameras):
    config = config_for("yolov7-tiny", benchmark={"scenario": "cameras"}, cameras=cameras)
    return build_cameras(camera_settings(config.cameras, config.dataset, config.benchmark))


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    scene = moving_shapes(160, 120, 6, photo=None)
    return write_clip(tmp_path_factory.mktemp("clips") / "street.mp4", scene, fps=15), scene


def test_a_file_camera_holds_its_first_frame_and_names_its_frames_by_camera(clip):
    path, scene = clip
    first, second = _cameras(sources=[str(path), str(path)])
    assert (first.name, second.name) == ("cam0", "cam1")
    assert first.arrives and first.loops and first.first_frame.shape == (120, 160, 3)
    assert second.label(str(path)) == "cam1/street.mp4"
    assert dict(first.loop_frames) == {str(path): 6}
    assert dict(first.loop_span_s)[str(path)] == pytest.approx(6 / 15)
    # The first frame is the clip's, as decoded (H.264 is lossy: close, not equal).
    assert np.abs(first.first_frame.astype(int) - scene.image(0).astype(int)).mean() < 8


def test_a_file_read_at_the_detectors_pace_neither_arrives_nor_loops(clip):
    path, _ = clip
    camera, = _cameras(sources=[str(path)], realtime=False)
    assert not camera.arrives and not camera.loops


def test_every_location_that_cannot_be_read_is_refused_naming_its_key(clip, tmp_path):
    path, _ = clip
    (tmp_path / "notes.txt").write_text("not a video")
    images = tmp_path / "photos"
    images.mkdir()
    cv2.imwrite(str(images / "a.png"), np.zeros((8, 8, 3), np.uint8))
    for location, words in ((tmp_path / "missing.mp4", "does not exist"),
                            (tmp_path / "notes.txt", "is a file but not a video"),
                            (images, "is a folder of images; cameras read video files and streams")):
        with pytest.raises(DatasetError, match=rf"^cameras.sources\[1\] .*{words}"):
            _cameras(sources=[str(path), str(location)])


def test_a_stream_that_refuses_at_start_is_refused_naming_its_key():
    url = f"http://127.0.0.1:{free_port()}/cam"
    with pytest.raises(DatasetError, match=r"^cameras.sources\[0\]: stream http://127.0.0.1:\d+/cam: the connection "
                                           r"was refused"):
        _cameras(sources=[url], connect_timeout_s=1.0)


def test_a_real_time_file_with_b_frames_is_called_out_with_the_wait_it_adds(clip, tmp_path):
    path, scene = clip
    reordered = write_clip(tmp_path / "recorded.mp4", scene, fps=15, options={"preset": "medium", "bf": "2"})
    camera, = _cameras(sources=[str(reordered)])
    held = camera.source.videos[0].info.reorder_frames
    assert held > 0
    warning = reorder_warning(camera)
    assert f"recorded.mp4 has B-frames, so its decoder holds {held} frame(s) back" in warning
    assert f"{1000 * held / 15:.0f} ms at its 15 fps" in warning and "-bf 0" in warning
    # read at the detector's pace, nothing arrives late; a clip as cameras encode it has nothing to reorder
    assert reorder_warning(_cameras(sources=[str(reordered)], realtime=False)[0]) is None
    plain, = _cameras(sources=[str(path)])
    assert plain.source.videos[0].info.reorder_frames == 0 and reorder_warning(plain) is None
