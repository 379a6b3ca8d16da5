"""utils.assembly.dataset_setup: the dataset section's video keys as decode settings, and the notes on dataset keys
set in a config that its items do not read."""
from datasets.kinds import IMAGES, VIDEOS
from datasets.sources.settings import DecodeSettings, FrameSelection
from utils.assembly.dataset_setup import decode_settings, unused_dataset_keys
from utils.config.schema import DatasetSection


def test_the_video_keys_are_the_decoders_settings():
    section = DatasetSection(path="clip.mp4", frame_fps=5.0, decoder_threads=0, max_pixels=1000)
    assert decode_settings(section) == DecodeSettings(0, 1000, FrameSelection(fps=5.0))
    assert decode_settings(DatasetSection(path="x")).selection == FrameSelection()


def test_keys_the_items_do_not_read_are_noted():
    videos_keys = DatasetSection(path="x", frame_stride=2, decoder_threads=2, workers=1)
    assert unused_dataset_keys(videos_keys, IMAGES, True) == [
        "dataset.frame_stride, dataset.decoder_threads not used: dataset.path holds images, and these keys choose and "
        "decode video frames"]
    assert unused_dataset_keys(videos_keys, VIDEOS, True) == [
        "dataset.workers is not used: video frames are decoded in the measured loop, on the main thread "
        "(dataset.decoder_threads sets FFmpeg's own threads)"]
    assert "cameras.fps" in unused_dataset_keys(videos_keys, IMAGES, False)[0]
    assert unused_dataset_keys(DatasetSection(path="x"), VIDEOS, True) == []
