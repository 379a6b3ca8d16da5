import socket
import threading
import time

import pytest

from datasets.dataset_root import DatasetError
from datasets.sources.live import LiveStream
from datasets.sources.settings import DecodeSettings, FrameSelection, StreamSettings
from tests.support.clips import moving_shapes, write_clip, write_hls
from tests.support.streams import free_port, http_folder, mjpeg_camera, rtsp_camera

QUICK = StreamSettings(connect_timeout_s=2.0, read_timeout_s=1.0, reconnects=2, reconnect_delay_s=0.1)


def _open(url, settings=QUICK, **decode):
    return LiveStream(url, DecodeSettings(**decode), settings).open()


@pytest.fixture
def silent_port():
    """A port that accepts connections and never says a word."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.mark.parametrize("scheme", ["http", "rtsp"])
def test_a_url_that_never_answers_is_the_users_error_within_its_timeout(silent_port, scheme):
    url = f"{scheme}://127.0.0.1:{silent_port}/cam"
    started = time.monotonic()
    with pytest.raises(DatasetError, match=rf"stream {scheme}://127.0.0.1:{silent_port}/cam: no answer to connect "
                                           r"within 0.5 s; check that the camera or server is up"):
        _open(url, StreamSettings(connect_timeout_s=0.5, read_timeout_s=0.5))
    assert time.monotonic() - started < 5.0  # bounded by the timeout, not by FFmpeg's own default


def test_a_refused_connection_is_named_and_a_password_never_shown():
    url = f"rtsp://admin:hunter2@127.0.0.1:{free_port()}/stream1"
    with pytest.raises(DatasetError, match=r"stream rtsp://admin:\*\*\*@127.0.0.1:\d+/stream1: the connection was "
                                           r"refused") as refused:
        _open(url)
    assert "hunter2" not in str(refused.value)


@pytest.mark.slow
def test_a_camera_is_read_with_each_frames_arrival_until_stopped():
    with mjpeg_camera("--fps", "20") as camera:
        reading = _open(camera.url, selection=FrameSelection(stride=2))
        got = []
        for item in reading:
            got.append(item)
            if len(got) == 6:
                threading.Thread(target=reading.stop).start()
        counts = reading.counts()
    assert [item.frame for item in got][:6] == [0, 2, 4, 6, 8, 10]
    assert all(item.image.shape == (120, 160, 3) and item.path == camera.url for item in got)
    arrivals = [item.arrival_s for item in got]
    assert arrivals == sorted(arrivals) and arrivals[0] <= time.monotonic()
    assert counts.ended == "stopped" and counts.connections == 1 and counts.gaps == ()
    assert counts.decoded >= 11 and counts.delivered == len(got)


@pytest.mark.slow
def test_a_stream_the_server_ends_is_reconnected_and_its_gap_recorded():
    with mjpeg_camera("--fps", "30", "--frames", "8") as camera:
        reading = _open(camera.url)
        got = []
        for item in reading:
            got.append(item)
            if len(got) == 20:
                reading.stop()
        counts = reading.counts()
    assert [item.frame for item in got] == list(range(20))  # numbered across the reconnects
    assert counts.connections >= 3 and len(counts.gaps) >= 2
    gap = counts.gaps[0]
    assert gap.resumed and gap.attempts == 1 and gap.start_s < gap.end_s
    # The gap lies between the last frame before it and the first after it.
    assert got[7].arrival_s <= gap.start_s and gap.end_s <= got[8].arrival_s


@pytest.mark.slow
def test_a_camera_that_dies_mid_run_ends_the_source_cleanly_with_its_gap():
    with mjpeg_camera("--fps", "20") as camera:
        reading = _open(camera.url)
        got = []
        for item in reading:
            got.append(item)
            if len(got) == 5:
                killed = time.monotonic()
                camera.kill()
        ended = time.monotonic()
    counts = reading.counts()
    assert len(got) >= 5 and counts.arrived == counts.decoded == counts.delivered == len(got)
    (gap,) = counts.gaps
    assert not gap.resumed and gap.attempts == 2 and gap.end_s >= gap.start_s >= killed
    assert counts.ended.startswith("gave up after 2 reconnect(s): ")
    assert "the connection was refused" in counts.ended
    bound = QUICK.read_timeout_s + QUICK.reconnects * (QUICK.reconnect_delay_s + QUICK.connect_timeout_s)
    assert ended - killed < bound + 2.0


@pytest.mark.slow
def test_a_stalled_camera_is_a_gap_after_the_read_timeout():
    with mjpeg_camera("--fps", "20", "--stall-after", "4") as camera:
        reading = _open(camera.url, StreamSettings(connect_timeout_s=2.0, read_timeout_s=0.5, reconnects=1,
                                                   reconnect_delay_s=0.0))
        got = []
        for item in reading:
            got.append(item)
            if len(got) == 6:
                reading.stop()
    counts = reading.counts()
    assert len(got) == 6 and counts.gaps[0].reason == "no answer for data within 0.5 s" and counts.gaps[0].resumed


@pytest.mark.slow
def test_frames_above_max_pixels_refuse_the_stream_at_its_first_connection():
    with mjpeg_camera("--width", "320", "--height", "240") as camera:
        with pytest.raises(DatasetError, match=r"stream http://127.0.0.1:\d+/: has frames of 320x240, 76,800 pixels, "
                                               r"above dataset.max_pixels 10,000 .*lower-resolution substream"):
            _open(camera.url, max_pixels=10_000)


@pytest.mark.slow
def test_an_rtsp_camera_is_read_from_a_real_rtsp_server(tmp_path):
    clip = write_clip(tmp_path / "cam.mp4", moving_shapes(320, 240, 30, photo=None))
    with rtsp_camera(clip) as camera:
        settings = StreamSettings(connect_timeout_s=5.0, read_timeout_s=3.0, reconnects=0, rtsp_transport="udp")
        reading = _open(camera.url, settings)
        got = []
        for item in reading:
            got.append(item)
            if len(got) == 10:
                reading.stop()
        counts = reading.counts()
    assert [item.frame for item in got] == list(range(10))
    assert all(item.image.shape == (240, 320, 3) for item in got)
    # over UDP a frame decoded before the first RTCP report may come without a timestamp: its pts_s stays empty
    stamped = [item.pts_s for item in got if item.pts_s is not None]
    assert stamped and stamped == sorted(stamped)
    assert counts.connections == 1 and counts.ended == "stopped"


def test_an_hls_playlist_over_http_is_read_once_to_its_end(tmp_path):
    """A playlist of known duration (VOD) ends as a file does: no reconnect, no gap."""
    playlist = write_hls(tmp_path / "hls", moving_shapes(160, 120, 20, photo=None))
    with http_folder(playlist.parent) as base:
        reading = _open(base + playlist.name)
        got = list(reading)
    counts = reading.counts()
    assert [item.frame for item in got] == list(range(20))
    assert counts.ended == "end of stream" and counts.gaps == () and counts.connections == 1
