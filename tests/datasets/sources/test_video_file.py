import threading
import time

import av
import cv2
import numpy as np
import pytest

from datasets.image_folder import decode_image
from datasets.sources.settings import DecodeSettings, FrameSelection
from datasets.sources.source import batches
from datasets.sources.video_file import VideoFile
from datasets.sources.video_probe import probe_video
from tests.support.clips import moving_shapes, scramble_packets, write_clip


def _video(path, realtime=False, limit=None, **decode):
    return VideoFile(probe_video(path, None), DecodeSettings(**decode), realtime, limit)


def _read(video):
    with video.open() as reading:
        return list(reading), reading.counts()


def test_every_frame_comes_with_its_index_and_timestamp_in_order(clips, scene):
    items, counts = _read(_video(clips["h264"]))
    assert [item.frame for item in items] == list(range(15))
    assert [item.pts_s for item in items] == pytest.approx([i / 15 for i in range(15)])
    assert all(item.error is None and item.image.shape == (240, 320, 3) and item.image.dtype == np.uint8
               for item in items)
    assert items[0].path == str(clips["h264"]) and items[0].arrival_s is None
    # The decoded frame is the drawn scene, up to H.264's loss: the shapes are where the labels say.
    assert np.abs(items[7].image.astype(int) - scene.image(7)).mean() < 6
    assert (counts.arrived, counts.decoded, counts.delivered, counts.not_decoded, counts.ended) == \
        (15, 15, 15, 0, "end of file")


def test_a_stride_or_a_target_fps_hands_on_some_frames_and_decodes_all(clips):
    items, counts = _read(_video(clips["h264"], selection=FrameSelection(stride=4)))
    # Decoded up to the last frame handed on: the ones after it are never read.
    assert [item.frame for item in items] == [0, 4, 8, 12] and (counts.decoded, counts.delivered) == (13, 4)
    items, _ = _read(_video(clips["h264"], selection=FrameSelection(fps=5)))
    assert [item.frame for item in items] == [0, 3, 6, 9, 12]


def test_a_limit_stops_reading_after_its_last_frame(clips):
    video = _video(clips["h264"], limit=4, selection=FrameSelection(stride=2))
    assert [ref.index for ref in video.refs()] == [0, 2, 4, 6]
    items, counts = _read(video)
    assert [item.frame for item in items] == [0, 2, 4, 6] and counts.arrived < 15


@pytest.mark.parametrize("threads", [0, 2])
def test_decoder_threads_change_nothing_in_the_frames(clips, threads):
    one, _ = _read(_video(clips["h264"], threads=1))
    more, _ = _read(_video(clips["h264"], threads=threads))
    assert [item.frame for item in more] == list(range(15))
    assert all(np.array_equal(a.image, b.image) for a, b in zip(one, more))


@pytest.mark.parametrize("name", ["h265", "mpeg4", "mjpeg", "vp9"])
def test_each_codec_decodes_every_frame(clips, name):
    items, counts = _read(_video(clips[name]))
    assert [item.frame for item in items] == list(range(10)) and counts.not_decoded == 0
    assert items[0].image.shape == (120, 160, 3)


def test_frames_equal_the_same_frames_saved_as_png_and_read_by_the_image_loader(clips, tmp_path):
    """Decode -> PNG -> the image loader gives the very arrays the video source gives: detections of video frames
    are those of the PNG frames."""
    first, _ = _read(_video(clips["h264"]))
    for item in first:
        assert cv2.imwrite(str(tmp_path / f"{item.frame:06d}.png"), item.image)
    again, _ = _read(_video(clips["h264"]))
    for item in again:
        assert np.array_equal(item.image, decode_image(tmp_path / f"{item.frame:06d}.png").image), item.frame


@pytest.mark.slow
def test_a_720p_15fps_clip_equals_its_png_frames(tmp_path):
    """The issue's clip: 1280x720 at 15 fps, H.264 and MPEG-4, every frame pixel-exact through PNG."""
    scene = moving_shapes(1280, 720, 20, seed=3, objects=4)
    for path in (write_clip(tmp_path / "cam.mp4", scene), write_clip(tmp_path / "cam.avi", scene, codec="mpeg4")):
        items, counts = _read(_video(path))
        assert counts.delivered == 20
        for item in items:
            png = tmp_path / f"{path.suffix[1:]}_{item.frame:06d}.png"
            assert cv2.imwrite(str(png), item.image)
            assert np.array_equal(item.image, decode_image(png).image), (path.name, item.frame)


@pytest.mark.parametrize("name", ["h264", "mpeg4", "mjpeg"])
def test_corrupt_packets_are_counted_and_skipped_and_their_frames_reported(clips, tmp_path, name):
    damaged = scramble_packets(clips[name], tmp_path / f"damaged{clips[name].suffix}", [3, 6])
    items, counts = _read(_video(damaged))
    # Every frame comes, in order: decoded ones as images, the two others as errors, none left out.
    assert [item.frame for item in items] == list(range(len(items)))
    assert [item.frame for item in items if item.image is None] == [3, 6]
    assert (counts.corrupt_packets, counts.not_decoded, counts.delivered) == (2, 2, len(items) - 2)
    assert all("frame 3 was not decoded (its data is corrupt or missing)" == item.error
               for item in items if item.frame == 3)
    assert items[-1].image is not None  # the source went on past the damage


def test_a_file_cut_mid_data_gives_its_whole_frames_and_reports_the_rest(tmp_path):
    path = write_clip(tmp_path / "whole.mkv", moving_shapes(160, 120, 20, photo=None), codec="mjpeg")
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(path.read_bytes()[:int(path.stat().st_size * 0.6)])
    video = _video(cut)
    announced = video.info.frames
    items, counts = _read(video)
    decoded = [item.frame for item in items if item.image is not None]
    assert 0 < len(decoded) < 20 and decoded == list(range(len(decoded)))
    assert [item.frame for item in items] == list(range(announced))  # what the packets announced, each accounted


def test_a_turned_clip_comes_out_upright(tmp_path):
    path = tmp_path / "portrait.mp4"
    image = np.zeros((96, 160, 3), np.uint8)
    image[:16, :16] = (255, 255, 255)  # a white corner at the stored top-left
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=15)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        stream.set_display_rotation(90)
        for packet in [*stream.encode(av.VideoFrame.from_ndarray(image, format="bgr24")), *stream.encode()]:
            container.mux(packet)
    (item,), _ = _read(_video(path))
    # 90 degrees counter-clockwise, as players turn it: the stored top-left corner is now bottom-left.
    assert item.image.shape == (160, 96, 3)
    assert item.image[-8:, :8].mean() > 200 and item.image[:8, :8].mean() < 50


def test_realtime_plays_the_file_at_its_own_rate_and_stamps_arrivals(clips):
    start = time.monotonic()
    items, _ = _read(_video(clips["mpeg4"], realtime=True))
    arrivals = [item.arrival_s for item in items]
    assert all(start <= arrival for arrival in arrivals)
    # A frame never arrives before its time after the first: 9 frames at 15 fps is at least 0.6 s.
    for item in items:
        assert item.arrival_s - arrivals[0] >= item.pts_s - items[0].pts_s - 1e-3


def test_stop_from_another_thread_ends_a_realtime_reading_at_once(clips):
    reading = _video(clips["h264"], realtime=True).open()
    got = []
    threading.Timer(0.2, reading.stop).start()
    for item in reading:
        got.append(item)
    counts = reading.counts()
    assert counts.ended == "stopped" and len(got) < 15
    assert all(item.image is not None for item in got)  # a stop reports no frame as missing


def test_reads_and_decodes_are_two_calls_the_harness_can_time_apart(clips):
    with _video(clips["h264"]).open() as reading:
        reads = list(reading.reads())  # the packets (and the decoder's flush), nothing decoded yet
        assert reading.counts().decoded == 0 and len(reads) == 16
        frames = [item for read in reads for item in reading.decode(read)]
    assert [item.frame for item in frames] == list(range(15))


def test_batches_cut_the_frames_as_the_loader_cuts_images(clips):
    with _video(clips["h264"]).open() as reading:
        sizes = [len(batch) for batch in batches(iter(reading), 4)]
    assert sizes == [4, 4, 4, 3]
