"""The run's items from the config's dataset section: what dataset.path holds (datasets.sources.dataset.find_dataset:
a folder of images, a video file or a folder of videos) with the decode settings its keys give; and what a reader
needs to know of the dataset keys the items do not read."""
from __future__ import annotations

from datasets.kinds import IMAGES
from datasets.sources.settings import DecodeSettings, FrameSelection
from utils.config.schema import DatasetSection

VIDEO_KEYS = ("frame_stride", "frame_fps", "decoder_threads")  # dataset.* keys only video frames read


def decode_settings(dataset: DatasetSection) -> DecodeSettings:
    """How dataset.path's videos are decoded and which of their frames the run reads (the schema refused a stride
    beside a target fps)."""
    return DecodeSettings(dataset.decoder_threads, dataset.max_pixels,
                          FrameSelection(dataset.frame_stride, dataset.frame_fps))


def unused_dataset_keys(dataset: DatasetSection, kind: str, reads_dataset: bool) -> list[str]:
    """Notes on dataset keys set in the config that these items do not read: the video keys beside images or a
    scenario of its own sources (the cameras have theirs), the loader's workers beside video frames."""
    given = dataset.model_fields_set
    notes = []
    video_keys = [f"dataset.{key}" for key in VIDEO_KEYS if key in given]
    if video_keys and not reads_dataset:
        notes.append(f"{', '.join(video_keys)} not used: this scenario reads its own sources (a camera run's frames "
                     "are chosen by cameras.fps and decoded with cameras.decoder_threads)")
    elif video_keys and kind == IMAGES:
        notes.append(f"{', '.join(video_keys)} not used: dataset.path holds images, and these keys choose and decode "
                     "video frames")
    if reads_dataset and kind != IMAGES and "workers" in given:
        notes.append("dataset.workers is not used: video frames are decoded in the measured loop, on the main thread "
                     "(dataset.decoder_threads sets FFmpeg's own threads)")
    return notes
