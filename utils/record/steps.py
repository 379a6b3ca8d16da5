"""Step timings as plain data: one StepRecord per timed step of one batch of one pass."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from datasets.kinds import IMAGES, VIDEOS

# Steps the harness brackets around the pipeline's own stages.
RUN_STEP = "run"  # one timed pass, for the energy and memory recorders; never in the step tables
PIPELINE_STEP = "pipeline"  # one batch: its fetch (load, or decode_frames) + the pipeline's stages
LOAD_STEP = "load"  # the wait for the data loader (image files), or for samples held in memory (LoadGen's)
# Reading and decoding a batch's video frames in the loop: demuxing its packets, decoding them, converting the
# frames handed on to BGR. Not `decode`, which is the box decoding of the dense and exported families' postprocess.
DECODE_FRAMES_STEP = "decode_frames"
FETCH_STEPS = {IMAGES: LOAD_STEP, VIDEOS: DECODE_FRAMES_STEP}  # a pass's fetch, by what dataset.path holds
ANNOTATE_STEP = "annotate_save"  # writing detections and annotated images, outside the pipeline latency
# The work of a timed step runs in a frame of this name plus the step's (utils.measure.steps.step_frames), so a
# sampler's stacks say which step they were taken in.
STEP_FRAME_PREFIX = "detbench_step_"


class PassKind(str, Enum):
    WARMUP = "warmup"
    TIMED = "timed"
    LAYERS = "layers"  # per-layer hooks attached
    PROFILER = "profiler"  # under torch.profiler
    ACCURACY = "accuracy"  # at mAP settings, after the timed passes (utils/checks/accuracy/accuracy_pass.py)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class StepRecord:
    step: str
    parent: Optional[str]
    pass_kind: PassKind
    pass_index: int
    batch: int
    images: int
    start_ns: int
    end_ns: int
    cold_shape: bool = False  # the first timed batch of an input shape no warm-up batch ran

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    @property
    def warmup(self) -> bool:
        return self.pass_kind is PassKind.WARMUP


STEP_TIMER_COLUMNS = ("step", "parent", "pass_kind", "pass_index", "batch", "images", "ms", "warmup", "start_s",
                      "end_s", "cold_shape")


def step_rows(records: list[StepRecord], origin_ns: int) -> list[dict]:
    """Long-form rows for steps_timer.csv, times in seconds since `origin_ns`; the run bracket left out."""
    return [{"step": r.step, "parent": r.parent or "", "pass_kind": r.pass_kind.value, "pass_index": r.pass_index,
             "batch": r.batch, "images": r.images, "ms": r.ms, "warmup": r.warmup,
             "start_s": (r.start_ns - origin_ns) / 1e9, "end_s": (r.end_ns - origin_ns) / 1e9, "cold_shape": r.cold_shape}
            for r in records if r.step != RUN_STEP]


def step_order(pipeline_steps: tuple[str, ...], fetch_steps: tuple[str, ...] = (LOAD_STEP,)) -> tuple[str, ...]:
    """Every step name in running order: the harness's brackets around the pipeline's own stages; `fetch_steps`,
    what the run's batches are fetched through (a video run's passes decode, LoadGen's queries load from memory)."""
    return (PIPELINE_STEP, *fetch_steps, *pipeline_steps, ANNOTATE_STEP)
