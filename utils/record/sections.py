"""The shape every measured section of the run record shares (`status`, `reason`, `source`), the sections of
below the layer (summary.json `cpu_counters`, `native_time`, `kernels`), the run's two answers (`agreement`,
`accuracy`), a LoadGen `scenario` and the `recipe` a file ran with, typed once: recorders and checks build them,
writers branch on them, and both name the same keys. A measurement of utils/measure/registry.py types its own
section in its folder (utils/measure/energy/section.py, ...).

Each section says by its `status` whether it holds measurements or, under `reason`, why it does not. Writers ask
`measured(section)` instead of comparing strings. The shapes are TypedDicts, not classes, because a section is read
back from summary.json (compare, the regression gate, sweeps) exactly as it was written. The recorders' tests and
whole runs check each section against its shape (tests/support/helpers.py, section_shape_errors): a key declared nowhere
here, or a required one missing, fails them.
"""

# Annotations evaluated (no `from __future__ import annotations`): TypedDict sees Required[...] only then.
from typing import Any, Literal, Mapping, Optional, Required, TypedDict

# The verdicts of utils/checks/agreement/matching.py and label_free.py (tests/utils/record/test_sections.py holds them to these).
Verdict = Literal["equal", "close", "different", "within_budget", "undecided"]

MEASURED = "measured"
UNAVAILABLE = "unavailable"
PARTIAL = "partial"  # some of what the section covers was measured, and `reason` or `source` says what not
DISABLED = "disabled"  # switched off by the run's config
NOT_MEASURED_YET = "not measured yet"  # the record's default until its recorder reports

SectionStatus = Literal["measured", "unavailable", "partial", "disabled", "not measured yet"]


def measured(section: Optional[Mapping[str, Any]]) -> bool:
    """Whether the section holds measurements (and not the reason there are none)."""
    return bool(section) and section.get("status") == MEASURED


class Section(TypedDict, total=False):
    status: Required[SectionStatus]
    reason: str  # why there are no measurements, or what is missing
    source: str  # where the figures come from
    note: str


class CpuCountersSection(Section, total=False):
    """Per timed pass the process's counter totals, and the counters refused with the reason."""
    counting: list[str]
    unavailable: dict[str, str]
    passes: list[dict[str, Any]]
    hardware: str
    page_faults: dict[str, Any]
    file: str  # the run directory's file of per-thread rows, added as summary.json is written


class NativeTimeSection(Section, total=False):
    """py-spy's native stacks placed on the steps' clock: per step, where its time went."""
    sampler: str
    rate_hz: float
    command: Optional[str]
    samples: int
    errors: int
    behind_s: float
    gil: str
    placement: str
    offset_uncertainty_ms: float
    steps: dict[str, dict[str, Any]]
    lines: list[str]
    files: list[str]  # the run directory's files that hold the samples, added as summary.json is written


class KernelsSection(Section, total=False):
    """Which kernels the runtime ran, and the CPU flags that decided them."""
    backend: str
    precision: str
    cpu_flags: dict[str, bool]
    onednn: dict[str, Any]
    convolution_kernels: dict[str, int]
    convolution_layers: int
    int8: dict[str, Any]
    file: str  # oneDNN's verbose output, when captured, added as summary.json is written


class AgreementSection(TypedDict, total=False):
    """A run against the torch fp32 reference: the verdict, what it was judged on, and with an accuracy pass, the
    verdict graded by the mAP drop (the detections' own under `detections_verdict`)."""
    verdict: Required[Verdict]
    reference: str
    images: int
    top_k: int
    nms_conf_thres: float
    at_configured_conf_thres: dict[str, Any]  # the matches at the deployed conf_thres
    judged_at: str  # which of the two the verdict was judged on
    reference_detections: int
    candidate_detections: int
    loose: dict[str, Any]
    strict: dict[str, Any]
    raw_output: dict[str, Any]
    thresholds: dict[str, float]
    detections_verdict: Verdict
    label_free: dict[str, Any]
    accuracy_drop: dict[str, Any]


class AccuracySection(TypedDict, total=False):
    """The accuracy pass: mAP against the labels (or, without, the reference's detections on mirror views), and
    beside a reference, its mAP and the drop."""
    ground_truth: Required[dict[str, Any]]
    images: int
    images_not_decoded: int
    settings: dict[str, Any]
    map_50_95: Optional[float]
    map_50: Optional[float]
    map_75: Optional[float]
    ar_100: Optional[float]
    detections: int
    not_scored: str  # why no mAP: labels with no object to find
    at_conf_thres: dict[str, Any]
    reference: dict[str, Any]
    drop: dict[str, Any]
    label_free: dict[str, Any]
    evaluation_s: float
    file: str
    images_first_used: int  # what the first scoring took, before an undecided verdict asked for more images


class ScenarioSection(TypedDict, total=False):
    """A scenario other than single_stream: what was asked; a LoadGen scenario's verdict under `result` and what
    the streams answered (a camera run's figures are its own section, `cameras`)."""
    name: Required[str]  # multi_stream, server, offline or cameras
    figure: str
    driver: str
    mode: str
    settings: dict[str, Any]
    result: dict[str, Any]
    streams: int
    streams_warmed: list[dict[str, Any]]
    batches_answered: int
    samples_answered: int
    logs: dict[str, str]
    accuracy: dict[str, Any]  # accuracy mode with labels: LoadGen's answers scored
    forward_bound: dict[str, Any]  # offline: the streams' whole-pipeline and forward-alone rates



class CamerasSection(Section, total=False):
    """benchmark.scenario cameras (utils/scenarios/cameras/): what was asked, the window, every camera's figures
    (cameras.csv's rows) and their totals, each gap of a stream, and the files."""
    definition: str
    cpu_definition: str
    settings: dict[str, Any]
    window_s: float
    drain_s: float  # after the window, the detectors finishing the frames still waiting
    window: dict[str, float]  # start_s and end_s on the run's clock
    total: dict[str, Any]
    streams: list[dict[str, Any]]
    gaps: list[dict[str, Any]]
    files: dict[str, str]
    clip: dict[str, Any]  # the annotated clip written after the window: path, frames, stream, encoded


class SourceReading(TypedDict):
    """What one reading of every video frame the run reads met (datasets.sources.counts.SourceCounts)."""
    arrived: int  # video packets read
    decoded: int  # frames the decoder gave out, selected or not
    delivered: int  # selected frames handed on
    not_decoded: int  # selected frames the decoder never gave out: in skipped.csv
    corrupt_packets: int  # packets the demuxer flagged or the decoder refused: skipped
    concealed_frames: int  # frames decoded with errors concealed: handed on
    ended: Optional[str]


class SourceSection(TypedDict, total=False):
    """A run over video frames (dataset.path a video or a folder of them): each video as probed, which frames the
    run reads and how they are decoded, and what one whole reading of them met (every pass reads them again)."""
    kind: Required[str]  # "videos"
    path: Required[str]
    step: str  # the step their decoding is timed as (decode_frames)
    frames: int  # frames the run reads, as selected (dataset.frame_stride / frame_fps, dataset.limit)
    selection: str
    decoder_threads: int
    videos: list[dict[str, Any]]
    reading: Optional[SourceReading]  # None: no reading went over every frame (a run stopped early)
    readings: int  # whole readings over the run's passes
    definition: str


class RecipeEntry(TypedDict, total=False):
    """The preprocessing and decode a file ran with (pipelines/exported/recipe_said.py): as run, on what ground,
    which of its keys the config set, and the keys that change it. Not a measurement: no status."""
    layout: Required[str]
    ground: Required[str]  # the exporter's (read from its metadata or a sidecar), or the layout's default
    yours: list[str]  # the dotted keys the config set among `keys`
    preprocess: dict[str, Any]  # every recipe step as run, and the input's height and width
    postprocess: dict[str, Any]  # the cut, NMS (IoU, class-agnostic or not) where it follows, the cap, clipping
    keys: list[str]  # the dotted keys that change the recipe
    said: str  # the recipe in one line, as the console prints it
    change: str  # how to change it, in words
