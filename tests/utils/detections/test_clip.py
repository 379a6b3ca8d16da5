"""The annotated clip: what is kept is bounded in frames and bytes, timestamps keep their own gaps, the clip decodes
back with its frames at their times in either codec, odd sides are cut to even, and without an encoder the frames
come as PNG files."""
import av
import numpy as np
import pytest
import torch

from pipelines.contract import Detections
from utils.detections import clip as clip_module
from utils.detections.clip import CODECS, ClipFrames, KeptFrame, timestamps_ms, write_clip

NAMES = ["circle", "square"]


def frame(value, pts_s, size=(96, 160)):
    found = Detections(torch.tensor([[10.0, 10.0, 40.0, 30.0]]), torch.tensor([0.9]), torch.tensor([1]))
    return KeptFrame(np.full((*size, 3), value, np.uint8), found, pts_s)


def test_kept_frames_are_bounded_in_frames_and_in_bytes():
    image = np.zeros((10, 10, 3), np.uint8)  # 300 bytes
    by_frames = ClipFrames(limit=2)
    assert [by_frames.offer(image, None, 0.0) for _ in range(3)] == [True, True, False] and by_frames.full
    by_bytes = ClipFrames(limit=10, max_bytes=700)
    assert [by_bytes.offer(image, None, 0.0) for _ in range(3)] == [True, True, False]
    assert by_bytes.held_bytes == 600 and by_bytes.frames[0].image is image  # a reference, never a copy


def test_timestamps_keep_their_gaps_and_repair_what_is_missing_or_out_of_order():
    assert timestamps_ms([10.0, 10.2, 10.6]) == [0, 200, 600]  # a dropped frame leaves its gap
    assert timestamps_ms([None, None, None], fps=10) == [0, 100, 200]
    assert timestamps_ms([1.0, 1.0, 0.5, 1.5]) == [0, 67, 134, 500]  # not after the previous: one frame later


@pytest.mark.parametrize("codec", CODECS)
def test_the_clip_decodes_back_with_its_frames_at_their_times(tmp_path, codec):
    frames = [frame(40 * index, 5.0 + 0.2 * index) for index in range(5)]
    path = write_clip(frames, tmp_path / "cameras.mp4", NAMES, codec=codec)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        decoded = list(container.decode(video=0))
        assert (stream.width, stream.height) == (160, 96)
    assert len(decoded) == 5
    assert [round(float(picture.pts * picture.time_base), 2) for picture in decoded] == [0.0, 0.2, 0.4, 0.6, 0.8]
    # the box is drawn: the frame holds more than its flat colour
    assert len(np.unique(decoded[2].to_ndarray(format="bgr24").reshape(-1, 3), axis=0)) > 10


def test_odd_sides_are_cut_to_even_and_another_size_is_left_out(tmp_path):
    frames = [frame(50, 0.0, size=(95, 161)), frame(90, 0.1, size=(95, 161)), frame(90, 0.2, size=(64, 64))]
    path = write_clip(frames, tmp_path / "cameras.mp4", NAMES)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (160, 94)
        assert len(list(container.decode(video=0))) == 2


def test_without_an_encoder_the_frames_come_as_pngs(tmp_path, monkeypatch):
    monkeypatch.setattr(clip_module, "encoder", lambda: None)
    written = write_clip([frame(10, 0.0), frame(20, 0.1)], tmp_path / "cameras.mp4", NAMES)
    assert written == tmp_path / "cameras" and sorted(p.name for p in written.iterdir()) == ["000000.png",
                                                                                             "000001.png"]
    assert write_clip([], tmp_path / "none.mp4", NAMES) is None
