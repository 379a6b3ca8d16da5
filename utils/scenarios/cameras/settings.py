"""The camera scenario's settings, typed once from the config's sections: the composition root hands over the
`cameras`, `dataset` and `benchmark` sections, never the whole config."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from datasets.sources.settings import DecodeSettings, FrameSelection, StreamSettings
from utils.config.schema import BenchmarkSection, CamerasSection, DatasetSection
from utils.scenarios.cameras.board import DROP, WAIT, BusyPolicy

# The layer-timing pass of a camera run times the window's first batches again, hooked: this many without
# benchmark.layer_timing_batches (a stream has no end to time "every batch" of).
LAYER_BATCHES = 4


@dataclass(frozen=True)
class CameraSettings:
    locations: tuple[str, ...]  # each camera's file, folder of videos or URL, in order
    keys: tuple[str, ...]  # the config key that named each, for messages
    realtime: bool
    busy: BusyPolicy  # what a camera that arrives (a stream, a file in real time) does while the detector is busy
    detector: str  # SHARED or PER_STREAM
    duration_s: float
    warmup_s: float
    batch_size: int
    decode: DecodeSettings
    stream: StreamSettings
    limit: Optional[int] = None  # dataset.limit: the frames of each file
    layer_timing: bool = False
    layer_batches: int = LAYER_BATCHES
    profiler: bool = False
    clip_frames: int = 0  # the annotated clip's frames at most; 0: none

    def policy(self, arrives: bool) -> BusyPolicy:
        """A file not played in real time waits for the detector (nothing dropped), keeping a batch's worth."""
        return self.busy if arrives else BusyPolicy(WAIT, self.batch_size)


def camera_settings(cameras: CamerasSection, dataset: DatasetSection, benchmark: BenchmarkSection) -> CameraSettings:
    """From the config's `cameras`, `dataset` and `benchmark` sections (utils.config.schema validated them)."""
    named = ([(source, f"cameras.sources[{index}]") for index, source in enumerate(cameras.sources)]
             or [(dataset.path, "dataset.path")])
    locations = tuple(location for location, _ in named for _ in range(cameras.count))
    keys = tuple(key for _, key in named for _ in range(cameras.count))
    busy = BusyPolicy(DROP) if cameras.when_busy == DROP else BusyPolicy(cameras.when_busy, cameras.queue_frames)
    decode = DecodeSettings(cameras.decoder_threads, dataset.max_pixels, FrameSelection(fps=cameras.fps))
    stream = StreamSettings(cameras.connect_timeout_s, cameras.read_timeout_s, cameras.reconnects,
                            cameras.reconnect_delay_s, cameras.realtime, cameras.rtsp_transport)
    return CameraSettings(locations, keys, cameras.realtime, busy, cameras.detector, cameras.duration_s,
                          cameras.warmup_s, dataset.batch_size, decode, stream, dataset.limit, benchmark.layer_timing,
                          benchmark.layer_timing_batches or LAYER_BATCHES, benchmark.profiler, cameras.clip_frames)
