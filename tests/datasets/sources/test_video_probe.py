import av
import numpy as np
import pytest

from datasets.dataset_root import DatasetError
from datasets.sources.video_probe import probe_video
from tests.support.clips import moving_shapes, write_clip


def test_a_clip_is_probed_without_decoding_more_than_one_frame(clips):
    info = probe_video(clips["h264"], None)
    assert (info.codec, info.width, info.height, info.fps, info.frames) == ("h264", 320, 240, 15.0, 15)
    assert info.timestamps == pytest.approx([i / 15 for i in range(15)])
    assert (info.corrupt_packets, info.truncated) == (0, None)


@pytest.mark.parametrize("name, codec", [("h265", "hevc"), ("mpeg4", "mpeg4"), ("mjpeg", "mjpeg"), ("vp9", "vp9")])
def test_the_codecs_and_containers_of_cameras_are_read(clips, name, codec):
    info = probe_video(clips[name], None)
    assert (info.codec, info.width, info.height, info.frames) == (codec, 160, 120, 10)


def test_a_variable_frame_rate_keeps_its_timestamps_as_given(tmp_path):
    times = [0.0, 0.04, 0.2, 0.21, 0.9, 1.0]
    path = write_clip(tmp_path / "vfr.mkv", moving_shapes(160, 120, len(times), photo=None), timestamps_s=times)
    assert probe_video(path, None).timestamps == pytest.approx(times)


def test_a_turned_clip_gives_its_upright_size(tmp_path):
    path = tmp_path / "portrait.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=15)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        stream.set_display_rotation(90)
        for packet in stream.encode(av.VideoFrame.from_ndarray(np.zeros((96, 160, 3), np.uint8), format="bgr24")):
            container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    info = probe_video(path, None)
    assert (info.width, info.height) == (96, 160)


def test_frames_above_max_pixels_are_refused_from_the_header(clips):
    with pytest.raises(DatasetError, match=r"video .*h264.mp4 has frames of 320x240, 76,800 pixels, above "
                                           r"dataset.max_pixels 76,799 .*raise dataset.max_pixels"):
        probe_video(clips["h264"], 76_799)
    assert probe_video(clips["h264"], 76_800).frames == 15


def test_a_file_that_is_not_a_video_is_named_with_the_fix(tmp_path):
    path = tmp_path / "notes.mp4"
    path.write_text("not a video\n" * 50)
    with pytest.raises(DatasetError, match=r"video .*notes.mp4 is not a video FFmpeg can read .*re-encode it"):
        probe_video(path, None)


def test_a_cut_mp4_lost_its_index_and_says_so(clips, tmp_path):
    data = clips["h264"].read_bytes()
    path = tmp_path / "cut.mp4"
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(DatasetError, match=r"cut.mp4 is not a video FFmpeg can read .*a file cut short loses the index"):
        probe_video(path, None)


def test_a_file_without_video_names_its_streams(tmp_path):
    path = tmp_path / "sound.mkv"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in stream.encode(frame):
            container.mux(packet)
    with pytest.raises(DatasetError, match=r"sound.mkv holds no video stream \(its streams: audio\)"):
        probe_video(path, None)


def test_a_codec_ffmpeg_cannot_decode_is_refused_with_the_reencoding(clips, tmp_path):
    data = clips["mpeg4"].read_bytes()
    assert data.count(b"FMP4") == 2  # the AVI's codec tag, in its stream header and its format
    path = tmp_path / "unknown.avi"
    path.write_bytes(data.replace(b"FMP4", b"QQQQ"))
    with pytest.raises(DatasetError, match=r"unknown.avi is in a video codec this FFmpeg \(PyAV's\) has no decoder "
                                           r"for; re-encode it, e.g. `ffmpeg -i unknown.avi -c:v libx264"):
        probe_video(path, None)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DatasetError, match=r"video .*gone.mp4 does not exist"):
        probe_video(tmp_path / "gone.mp4", None)
