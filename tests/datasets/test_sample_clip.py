import av

from datasets.sample_clip import SAMPLES_CLIP, make_samples_clip
from datasets.sources.settings import DecodeSettings
from datasets.sources.video_file import VideoFile
from datasets.sources.video_probe import probe_video


def test_the_shipped_clip_is_720p_at_15_fps_for_4_seconds():
    info = probe_video(SAMPLES_CLIP, None)
    assert (info.codec, info.width, info.height, info.fps, info.frames) == ("h264", 1280, 720, 15.0, 60)
    assert SAMPLES_CLIP.stat().st_size < 1 << 20
    with av.open(str(SAMPLES_CLIP)) as container:  # as a camera sends it: no frame waits to be reordered
        assert container.streams.video[0].codec_context.has_b_frames == 0


def test_the_maker_zooms_over_each_sample_photo_in_turn(tmp_path):
    clip = make_samples_clip(tmp_path / "small.mp4", width=160, height=90, fps=10, seconds_per_photo=0.3)
    with VideoFile(probe_video(clip, None), DecodeSettings()).open() as reading:
        frames = list(reading)
    assert len(frames) == 18 and frames[0].image.shape == (90, 160, 3)
    # A new photo every third frame: the picture changes far more there than within one photo's zoom.
    change = [abs(frames[i].image.astype(int) - frames[i - 1].image).mean() for i in range(1, 18)]
    cuts = sorted(range(1, 18), key=lambda i: change[i - 1])[-5:]
    assert sorted(cuts) == [3, 6, 9, 12, 15]
