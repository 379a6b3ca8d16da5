"""The run configuration: schema, YAML loading and --set overrides (their messages: messages.py)."""
from __future__ import annotations

import copy
import datetime as dt
import errno
import importlib.util
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, create_model,
                      field_validator, model_validator)

from pipelines.registry import FACTS, detector_files_in, facts_for, known_architectures, known_files, runtime_refusal
from pipelines.runtimes import registry as runtimes
from pipelines.runtimes.spec import quantizes
from pipelines.settings import EVALUATION_KEYS, NO_CAP, SharedPostprocess, SharedPreprocess
from utils.config import strict_yaml
from utils.core.bounded_text import clipped, shown
from utils.core.errors import UsageError
from utils.config.messages import describe_errors, yaml_error
from utils.config.renamed_keys import renamed_in
from utils.core.suggestions import value_hint


class ConfigError(UsageError):
    """A user's configuration mistake; the message says what and how to fix it."""


def _holdable_path(value: str) -> str:
    """A path the file system can hold at all: with a NUL or an over-long name every later look-up would raise."""
    if "\0" in value:
        raise ValueError("contains a NUL character, which no path can hold")
    try:
        os.stat(value)
    except OSError as error:
        if error.errno == errno.ENAMETOOLONG:
            raise ValueError("is too long for a path on this system (a name of at most 255 characters, a path of "
                             "at most 4096, on Linux)") from None
    return value


PathText = Annotated[str, AfterValidator(_holdable_path)]
AUTO = "auto"


class _Section(BaseModel):
    # Strict: YAML already types every value, so `true` or "4" where a number belongs is a mistake to report,
    # not a value to coerce (ints may still stand for floats). Infinity and NaN would make waits endless.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)


class RunSection(_Section):
    """Where the run directory goes and what it is called."""

    id: Optional[str] = Field(None, description="run directory name; null: `<UTC timestamp>_<config name>`. An "
                              "existing directory is never overwritten")
    output_dir: PathText = Field("outputs", description="where run directories go")
    seed: int = Field(0, description="seed of the random weights")

    @field_validator("id")
    @classmethod
    def _plain_name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (not value.strip() or "/" in value or "\\" in value or value in (".", "..")):
            raise ValueError("must be a plain directory name (no slashes, not empty)")
        if value is not None and len(os.fsencode(value)) > 255:
            raise ValueError("is longer than a directory name can be (255 bytes)")
        return value


# Pillow's decompression-bomb threshold: an image above it is skipped, read from its header before decoding.
DEFAULT_MAX_PIXELS = 178_956_970
MAX_CONFIG_BYTES = 64 * 1024  # configs are a few hundred bytes; parsing stays well under a second and a few MB
# What load_config tells the validation: the config file, and the dotted keys --set gave.
CONFIG_FILE, COMMAND_LINE_KEYS = "config_file", "command_line_keys"


class DatasetSection(_Section):
    """The images or video frames the run reads, how they are batched and where their labels are."""

    path: PathText = Field(description=(
        "a folder searched recursively for jpg, jpeg, png, bmp, webp, tif, tiff; or a video file (mp4, m4v, mkv, "
        "avi, mov, webm, ts, mts, mpg, mpeg) or a folder of videos, whose frames are decoded in the measured loop "
        "(the step `decode_frames`; see [cameras.md](cameras.md)). Relative paths are resolved from the current "
        "directory. Photos are read upright: the EXIF orientation is applied as image viewers apply it, and "
        "detections are in the upright image's pixels; a video turned by its display matrix is turned as players "
        "turn it. `benchmark.scenario: cameras` reads a video file or a folder of videos here as its cameras, or "
        "nothing with `cameras.sources`"))
    limit: Optional[int] = Field(None, ge=1, description="first N images (video frames, as selected) in sorted order; "
                                 "null: all")
    batch_size: int = Field(1, ge=1, description="images per forward")
    workers: Optional[int] = Field(None, ge=0, description=(
        "DataLoader worker processes (0 = decode on the main thread, between forwards). null: one worker only "
        "where a core is left beside the compute threads (on 2 cores with 2 threads: 0, since a worker decoding "
        "during the forward slows it); a choice that takes a compute core is reported in the warnings. Video "
        "frames are always decoded on the main thread, in the loop"))
    max_pixels: Optional[int] = Field(DEFAULT_MAX_PIXELS, ge=1, description=(
        "an image whose header declares more pixels is skipped before decoding, with the reason in `skipped.csv` "
        "(Pillow's decompression-bomb threshold); a video whose frames are larger is refused at start (exit "
        "status 2), before any frame is decoded for the run; null lifts the limit (OpenCV's own 2^30 stays; see "
        "[troubleshooting.md](troubleshooting.md))"))
    labels: Optional[PathText] = Field(None, description=(
        "ground truth for the accuracy pass: a YOLO labels folder or a COCO json file, recognised by what it is; "
        "video frames are labelled per frame (YOLO `<video>/<frame:06d>.txt`, or COCO's video extension) "
        "(relative paths from the current directory; see [accuracy.md](accuracy.md) and "
        "[cameras.md](cameras.md#labels-for-frames))"))
    frame_stride: int = Field(1, ge=1, description=(
        "video frames: run every k-th frame by index (frames 0, k, 2k, ...); every frame is still decoded, as the "
        "next ones are predicted from it. 1: every frame"))
    frame_fps: Optional[float] = Field(None, gt=0.0, description=(
        "video frames: run at most this many frames per second of the video's own timestamps (the first frame of "
        "each 1/fps slot), instead of a stride; every frame is still decoded. null: every frame (or frame_stride)"))
    decoder_threads: int = Field(1, ge=0, description=(
        "video frames: FFmpeg's decoder threads (0: one per core, FFmpeg's choice); 1 leaves the cores to the "
        "detector, as one decoder thread per camera is how many run. The frames are the same whatever the count"))

    @model_validator(mode="after")
    def _one_frame_selection(self) -> "DatasetSection":
        if self.frame_fps is not None and self.frame_stride != 1:
            raise ValueError(f"dataset.frame_stride {self.frame_stride} and dataset.frame_fps {self.frame_fps:g} "
                             "both choose video frames; set one of them (frame_stride 1 or frame_fps null)")
        return self


class SharedModel(BaseModel):
    """The model keys every family reads: what the network is (model.arch, or model.file) and its weights."""

    arch: str = Field("yolov7", description=(
        "`yolov7`, `yolov7-tiny` or a path to a model-definition yaml in the YOLOv7 cfg format; or a torchvision "
        "detector by its builder's name (R-CNN, RetinaNet, FCOS, SSD, SSDlite), each with its own defaults and "
        "keys (see [models.md](models.md))"))
    weights: Optional[PathText] = Field(None, description="checkpoint path; null: seeded random weights")
    fuse: bool = Field(True, description="fold Conv+BN and re-parameterise RepConv before running")
    file: Optional[PathText] = Field(None, description=(
        "an exported detector, an ONNX file, an OpenVINO IR's .xml (its .bin beside it) or a .tflite: the file is "
        "the network, so model.arch and model.weights do not apply "
        "(see [models.md](models.md#a-detector-given-as-a-file))"))

    @property
    def network(self) -> str:
        """What builds the network: model.file, else model.arch."""
        return self.file if self.file is not None else self.arch

    @property
    def named(self) -> str:
        """The network as a message names it."""
        return f"model.file {self.file}" if self.file is not None else f"model.arch {self.arch}"

    @model_validator(mode="before")
    @classmethod
    def _moved_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "threads" in data:
            raise ValueError("model.threads is now runtime.threads: move the value there "
                             f"(e.g. --set runtime.threads={shown(data['threads'])})")
        return data

    @field_validator("arch")
    @classmethod
    def _known_arch(cls, value: str) -> str:
        if any(value in facts.ARCHS for facts in FACTS):
            return value
        if any(facts.ARCH_FILES and value.endswith(facts.ARCH_FILES) for facts in FACTS):
            return _holdable_path(value)
        raise ValueError(f"must be {known_architectures()}"
                         f"{value_hint(value, [arch for facts in FACTS for arch in facts.ARCHS])}")

    @field_validator("file")
    @classmethod
    def _known_file(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and Path(value).is_dir():
            return _the_file_in(Path(value))
        # Else the file would be taken for a model.arch, and the message would name that key.
        if value is None or any(facts.accepts(value) for facts in FACTS):
            return value
        raise ValueError(f"must be {known_files()}")


def _the_file_in(folder: Path) -> str:
    """An exporter's folder (Ultralytics' `yolo11n_openvino_model/`) stands for the one detector file inside it."""
    found = detector_files_in(folder)
    if len(found) == 1:
        return str(found[0])
    if found:
        raise ValueError(f"{folder} is a folder holding {len(found)} detector files "
                         f"({', '.join(child.name for child in found)}); set model.file to one of them")
    raise ValueError(f"{folder} is a folder holding no detector file; set model.file to {known_files()}")


def _of_the_families(name: str, shared: type[BaseModel], part: str, doc: str) -> type[_Section]:
    """One section holding the keys every family reads and each family's own keys of a part (Preprocess or
    Postprocess), each family's model with its defaults and checks; the Config keeps each family to its own.
    Pydantic collects a class's fields from its bases last to first, so the bases are reversed to keep the
    shared keys first, then the families' order (families that share a model, as torchvision's do, once)."""
    bases = tuple(reversed(list(dict.fromkeys([shared, *(getattr(facts, part) for facts in FACTS
                                                          if hasattr(facts, part))]))))
    return type(name, (*bases, _Section), {"__module__": __name__, "__doc__": doc})


def _owned_keys(part: str) -> str:
    keys: dict[str, list[str]] = {}
    for facts in FACTS:
        for key in getattr(facts, part, BaseModel).model_fields:
            keys.setdefault(key, []).append(facts.NAME)
    return "; ".join(f"{key} ({', '.join(names)})" for key, names in keys.items())


ModelSection = _of_the_families(
    "ModelSection", SharedModel, "Model", "The detector: its architecture and weights, or the file that is it. "
    "Each family reads its own keys too (" + _owned_keys("Model") + "); another family's key is refused.")
PreprocessSection = _of_the_families(
    "PreprocessSection", SharedPreprocess, "Preprocess", "What turns an image into the network's input. "
    f"{' '.join(SharedPreprocess.__doc__.split())[:-1]}: {', '.join(SharedPreprocess.model_fields)}, each "
    "defaulting to the architecture's own. Each family reads its own keys too (" + _owned_keys("Preprocess")
    + "); another family's key is refused.")
PostprocessSection = _of_the_families(
    "PostprocessSection", SharedPostprocess, "Postprocess", "What turns the network's output into detections. "
    f"{' '.join(SharedPostprocess.__doc__.split())[:-1]}: {', '.join(SharedPostprocess.model_fields)}, each "
    "defaulting to the architecture's own. Each family reads its own keys too (" + _owned_keys("Postprocess")
    + "); another family's key is refused.")


class EnergySection(_Section):
    """Energy through RAPL (pyJoules)."""

    enabled: bool = Field(True, description="measure energy through RAPL when the machine allows it")
    idle_s: float = Field(0.0, ge=0.0, description=(
        "measure idle power first for this many seconds and report net figures"))


class MemorySection(_Section):
    """Memory sampled from /proc."""

    enabled: bool = Field(True, description="sample RSS (and PSS) during the run")
    check: bool = Field(True, description=(
        "refuse a batch the memory estimate says cannot fit; false runs it anyway (see docs/limits.md)"))
    interval_s: float = Field(0.05, gt=0.0, description="RSS sampling interval, in seconds")


class CalibrationSection(_Section):
    """How int8 is calibrated."""

    images: int = Field(300, ge=1, description="int8: the run's first N images (all when fewer) calibrate the "
                                               "quantization")
    keep_float: Optional[list[str]] = Field(None, description=(
        "int8: layers whose decode stays in float, by type (`Detect`) or module path (`model.77`); `[]` "
        "quantizes everything; null: the architecture's own (YOLO: `[Detect]`, whose decode holds pixel boxes "
        "beside 0-1 scores in one Concat)"))
    path: Optional[PathText] = Field(None, description=(
        "int8: a folder of images to calibrate on; null: the dataset's last images (at most half), which the "
        "accuracy and agreement passes then never score"))
    preset: Literal["mixed", "performance"] = Field("mixed", description=(
        "int8: `mixed`: symmetric weights, asymmetric activations (NNCF's MIXED; ONNX Runtime's uint8 "
        "activations); `performance`: symmetric both (NNCF's PERFORMANCE; ONNX Runtime's int8 activations)"))
    range: Literal["default", "minmax", "percentile"] = Field("default", description=(
        "int8: how activation ranges are read from the calibration images: `default` the quantizer's own; "
        "`minmax` their extremes; `percentile` a high quantile, which clips outliers (NNCF's MEAN_QUANTILE, "
        "ONNX Runtime's Percentile)"))
    bias_correction: Literal["fast", "full", "none"] = Field("fast", description=(
        "int8, openvino: NNCF's bias correction after quantizing, `fast` (its default), `full` (slower, data "
        "free of its approximation) or `none`; ONNX Runtime has none, so it takes `fast` only"))
    accuracy_control: bool = Field(True, description=(
        "int8: where the plain int8 model's mAP drop on the calibration images exceeds "
        "`benchmark.accuracy.max_drop`, return the operations that cost most to float until it fits, or until "
        "what is left is no faster than fp32; recorded in summary.json `runtime.preparation.accuracy_control` "
        "(see [accuracy.md](accuracy.md#accuracy-aware-int8))"))
    control_evaluations: int = Field(80, ge=1, description=(
        "int8 with accuracy_control: the most models one ranking of the operations compiles and scores, which "
        "bounds the search's time (each is a compile and a forward of 8 calibration images)"))


class _RuntimeCommon(_Section):
    """The runtime section's keys every runtime reads; each runtime adds its own (its spec's options)."""

    threads: Optional[int] = Field(None, ge=1, description=(
        "compute threads; null keeps torch's default"))
    cache_dir: Optional[PathText] = Field(None, description=(
        "where exported ONNX files are cached; null: `$XDG_CACHE_HOME/detbench` or `~/.cache/detbench`"))
    calibration: CalibrationSection = CalibrationSection()
    streams: Union[Annotated[int, Field(ge=1)], Literal["auto"]] = Field(1, description=(
        "requests in flight at once, `runtime.threads` split between them; more than 1 needs a LoadGen scenario; "
        "`auto`: the runtime's own choice (OpenVINO's throughput hint; one stream for ONNX Runtime and torch, and "
        "under single_stream), recorded in summary.json `runtime.streams_auto` "
        "(see [scenarios.md](scenarios.md#streams-and-pinning))"))
    pinning: bool = Field(False, description=(
        "tie every compute thread to a core of its own (see [scenarios.md](scenarios.md#streams-and-pinning))"))
    allocator: Literal["inherit", "keep_heap"] = Field("inherit", description=(
        "`inherit`: malloc as the process started, as the deployment has it; `keep_heap`: glibc keeps the memory "
        "it frees, so activations are not faulted in afresh every forward (what GLIBC_TUNABLES="
        "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=... does; see "
        "[below-the-layer.md](below-the-layer.md#page-faults-and-the-allocator))"))


# Each runtime's own keys, in registry order; a key two runtimes offer is one key.
_RUNTIME_OPTIONS = {key: option for spec in runtimes.SPECS.values()
                    for key, option in spec.options.model_fields.items()}


class _RuntimeChecks(_Section):
    @model_validator(mode="after")
    def _possible_combination(self) -> "_RuntimeChecks":
        spec = runtimes.SPECS[self.backend]
        offered = spec.precisions
        if self.precision not in offered:
            others = runtimes.offering(self.precision)
            hint = f"use runtime.backend {' or '.join(others)}" if others else "no backend offers it yet"
            reason = spec.refusals.get(self.precision)
            raise ValueError(f"runtime.backend {self.backend} runs precision {', '.join(offered)}, not "
                             f"{self.precision}{' (' + reason + ')' if reason else ''}: {hint}")
        for key, option in _RUNTIME_OPTIONS.items():
            owners = [other.name for other in runtimes.SPECS.values() if key in other.options.model_fields]
            if getattr(self, key) != option.default and self.backend not in owners:
                raise ValueError(f"runtime.{key} applies to runtime.backend {' or '.join(owners)} only (got backend "
                                 f"{self.backend}); remove it or set runtime.backend: {owners[0]}")
        return self


# The runtime section: backend and precision from the registry, each runtime's own keys, the common ones.
RuntimeSection = create_model(
    "RuntimeSection", __base__=_RuntimeChecks, __module__=__name__,
    backend=(Literal[tuple(runtimes.SPECS)], Field(runtimes.REFERENCE.name, description=(
        "what runs the network's forward (see [runtimes.md](runtimes.md))"))),
    precision=(Literal[tuple(dict.fromkeys(p for spec in runtimes.SPECS.values() for p in spec.precisions))],
               Field(runtimes.REFERENCE_PRECISION, description=(
                   "`fp32` (for a .tflite, the file as it is stored, float16 or int8 included); `bf16` with `torch` "
                   "(autocast) and `openvino`, on CPUs with native bf16; `int8` with "
                   "`openvino` and `onnxruntime`; `int8+bf16` with `openvino` on CPUs with native bf16: int8, its "
                   "layers left in float at bf16, as OpenVINO's CPU plugin runs them by default there (see "
                   "[accuracy.md](accuracy.md))"))),
    **{key: (option.annotation, option) for key, option in _RUNTIME_OPTIONS.items()},
    **{key: (field.annotation, field) for key, field in _RuntimeCommon.model_fields.items()},
)
RuntimeSection.__doc__ = "What runs the network's forward, at which precision, on how many threads."


class AgreementSection(_Section):
    """The check that a runtime other than torch fp32 gives the reference's detections."""

    enabled: bool = Field(True, description=(
        "for any runtime other than the reference, compare its detections with the fp32 reference's (torch "
        "fp32 eager; for model.file, the file as exported at fp32)"))
    images: int = Field(8, ge=1, description="how many of the first images the reference runs")
    top_k: int = Field(100, ge=1, description="candidates per image compared, ranked by the reference's score")


class AccuracySection(_Section):
    """The accuracy pass: detections at mAP settings, apart from the timed passes. Each architecture states its
    own evaluation protocol (YOLO: YOLOv7's test.py, conf 0.001, IoU 0.65, 300 per image, every class per box;
    torchvision's detectors: their builder's own cut, NMS IoU and detections kept); a key set here overrides it."""

    enabled: bool = Field(True, description=(
        "run the accuracy pass when there are labels or a reference (see [accuracy.md](accuracy.md))"))
    images: Optional[int] = Field(None, ge=1, description=(
        "first N images of the accuracy pass; null: all with labels, `benchmark.agreement.images` without"))
    conf_thres: Optional[float] = Field(None, ge=0.0, le=1.0, description=(
        "score threshold of the accuracy pass; null: the architecture's protocol"))
    iou_thres: Optional[float] = Field(None, ge=0.0, le=1.0, description=(
        "NMS IoU threshold of the accuracy pass; null: the architecture's protocol"))
    max_det: Optional[int] = Field(None, ge=1, description=(
        "detections kept per image in the accuracy pass; null: the architecture's protocol"))
    multi_label: Optional[bool] = Field(None, description=(
        "yolo: each box under every class above conf_thres, as YOLOv7's test.py suppresses for its mAP; false: "
        "its best class only, as a deployment shows it; null: the architecture's protocol (torchvision's "
        "detectors keep every class above the cut by construction: the key does not apply)"))
    max_images: int = Field(300, ge=1, description=(
        "without labels, an undecided verdict scores more images, as many as it asks for, up to this many "
        "(see [verdict.md](verdict.md))"))
    max_drop: float = Field(0.01, ge=0.0, le=1.0, description=(
        "mAP@0.5:0.95 drop against the fp32 reference a `within_budget` verdict allows"))
    preprocess: Literal["official", "deployed"] = Field("official", description=(
        "`official`: as the family's own mAP evaluation prepares images (YOLO: YOLOv7's test.py letterbox: the long "
        "side resized to img_size by pixel area, each batch centred in the rectangle of its aspect ratios plus half "
        "a stride; torchvision's detectors: their deployed transform); `deployed`: the run's own preprocess (see [accuracy.md](accuracy.md))"))
    label_free_truth: Literal["mirrored", "reference"] = Field("mirrored", description=(
        "without labels, what stands in for them: `mirrored`, the reference's detections on the mirror images "
        "(scored at mAP@0.5:0.95); `reference`, its detections on the images themselves (scored at mAP@0.5), for "
        "models not trained with horizontal flips (see [verdict.md](verdict.md))"))
    judge_views: int = Field(5, ge=1, le=5, description=(
        "with `label_free_truth: mirrored`, how many mirror views stand in for the labels: the plain mirror, then "
        "mirrors shifted by a few pixels; each is one more reference pass over the scored images, and their mean "
        "errs less than one view (see [verdict.md](verdict.md))"))
    bootstrap: int = Field(200, ge=0, description=(
        "bootstrap resamples (over images) of the drop's 95% interval; 0: none"))


SINGLE_STREAM = "single_stream"  # detbench's own passes
CAMERAS = "cameras"  # cameras read, decoded and detected as deployments run them (the `cameras` section)
LOADGEN_SCENARIOS = ("multi_stream", "server", "offline")  # under MLPerf LoadGen
SCENARIOS = (SINGLE_STREAM, *LOADGEN_SCENARIOS, CAMERAS)


class LoadgenSection(_Section):
    """MLPerf LoadGen's settings for the scenarios other than single_stream, in one place (as MLPerf's
    user.conf). Minimums are scaled for CPUs: MLPerf's own are 600 s and tens of thousands of queries."""

    mode: Literal["performance", "accuracy"] = Field("performance", description=(
        "`performance`, or `accuracy`: every image answered once, detections written"))
    min_duration_s: float = Field(10.0, gt=0.0, description=(
        "LoadGen's minimum test duration, in seconds (MLPerf's own is 600 s; scaled for CPUs)"))
    max_duration_s: Optional[float] = Field(None, gt=0.0, description=(
        "an upper bound on the test's duration, in seconds; null: no bound beyond the minimums"))
    min_query_count: int = Field(64, ge=1, description=(
        "LoadGen's minimum number of queries (offline sends one query)"))
    performance_sample_count: Optional[int] = Field(None, ge=1, description=(
        "how many images LoadGen keeps decoded in memory (its performance sample count); null: all images"))
    target_qps: Optional[float] = Field(None, gt=0.0, description=(
        "`server`: the arrival rate (required); `offline`: the expected rate (null: measured)"))
    target_latency_ms: Optional[float] = Field(None, gt=0.0, description="`server`: the latency bound (required)")
    target_latency_percentile: float = Field(0.99, gt=0.0, lt=1.0, description=(
        "`server`: the share of queries that must meet the bound"))
    samples_per_query: int = Field(8, ge=1, description="`multi_stream`: images per query")
    find_peak: bool = Field(False, description=(
        "`server`: search the highest valid rate (LoadGen's FindPeakPerformance mode)"))
    seed: int = Field(0, ge=0, description="LoadGen's sample-index, schedule and sample-library seeds")


class BenchmarkSection(_Section):
    """Which passes run, how long they are measured, and what is measured beside the time."""

    warmup: Union[Literal["auto"], int] = Field("auto", description=(
        "`auto`: one batch of every distinct network input shape the timed passes will see (see "
        "[measurement.md](measurement.md#warm-up-that-covers-every-input-shape)); a number: that many first "
        "batches. Recorded as warm-up and excluded from statistics"))
    warmup_max_batches: int = Field(32, ge=1, description=(
        "the most batches `warmup: auto` runs; shapes beyond it run cold in timed pass 0 and are reported apart"))
    repeats: int = Field(1, ge=1, description="timed passes over the data")
    timed_batches: Optional[int] = Field(None, ge=1, description=(
        "time only the first N batches in each timed pass (detections.csv then holds their images; the layer-timing "
        "pass takes as many unless layer_timing_batches says otherwise); null: every batch. `tune`'s first looks "
        "time a few (see [tune.md](tune.md#the-race))"))
    min_time_s: float = Field(0.0, ge=0.0, description=(
        "keep adding timed passes until this many seconds have been measured"))
    target_ci: Optional[float] = Field(None, gt=0.0, lt=1.0, description=(
        "keep adding timed passes until the 95% confidence half-width of the per-image median is under this "
        "fraction (e.g. `0.02` = +-2%); null: off"))
    max_time_s: float = Field(600.0, gt=0.0, description="the bound on measured time for `target_ci`, in seconds")
    layer_timing: bool = Field(True, description="run one extra pass with per-layer hooks")
    layer_timing_batches: Optional[int] = Field(None, ge=1, description=(
        "limit that instrumented pass to the first N batches; null: all"))
    profiler: bool = Field(False, description=(
        "run one extra batch under torch.profiler (with memory profiling) and export `trace.json`, "
        "`layer_ops.csv` and the memory columns of `layer_timer.csv`"))
    energy: EnergySection = EnergySection()
    memory: MemorySection = MemorySection()
    agreement: AgreementSection = AgreementSection()
    accuracy: AccuracySection = AccuracySection()
    scenario: Literal[SCENARIOS] = Field(SINGLE_STREAM, description=(
        "which question the run answers: detbench's own passes (`single_stream`), an MLPerf LoadGen scenario "
        "(see [scenarios.md](scenarios.md)), or `cameras`: video files and streams as cameras, read at their "
        "frame rate by the `cameras` section (see [cameras.md](cameras.md#the-camera-scenario))"))
    loadgen: LoadgenSection = LoadgenSection()

    @model_validator(mode="after")
    def _loadgen_fits_the_scenario(self) -> "BenchmarkSection":
        loadgen, scenario = self.loadgen, self.scenario
        if scenario == "server" and (loadgen.target_qps is None or loadgen.target_latency_ms is None):
            raise ValueError("benchmark.loadgen.target_qps and benchmark.loadgen.target_latency_ms are required "
                             "for benchmark.scenario server: the arrival rate and the latency bound, e.g. 2 and 1000")
        if loadgen.find_peak and scenario != "server":
            raise ValueError(f"benchmark.loadgen.find_peak applies to benchmark.scenario server only, not "
                             f"{scenario}; remove it")
        if self.timed_batches is not None and scenario != SINGLE_STREAM:
            raise ValueError(f"benchmark.timed_batches applies to benchmark.scenario {SINGLE_STREAM} only, not "
                             f"{scenario} (LoadGen times its own queries); remove it")
        if (loadgen.max_duration_s is not None and loadgen.max_duration_s < loadgen.min_duration_s):
            raise ValueError("benchmark.loadgen.max_duration_s is below benchmark.loadgen.min_duration_s; raise it "
                             "or leave it unset")
        return self

    @field_validator("warmup", mode="before")
    @classmethod
    def _auto_or_a_count(cls, value: Any) -> Any:
        if value == "auto" or (type(value) is int and value >= 0):
            return value
        raise ValueError("must be auto (warm up every input shape the run will see) or a whole number of "
                         "batches >= 0, e.g. 1")


DROP, QUEUE = "drop", "queue"
SHARED, PER_STREAM = "shared", "per_stream"


class CamerasSection(_Section):
    """The cameras of `benchmark.scenario: cameras`: what they read, at which rate, what a busy detector does with
    a new frame, how streams are read, and how long the run measures (see [cameras.md](cameras.md#the-camera-scenario))."""

    count: int = Field(1, ge=1, description=(
        "cameras reading each source (`dataset.path`, or each of `sources`), each camera with its own decoder and "
        "connection: the N of a capacity point"))
    sources: list[PathText] = Field([], description=(
        "video files, folders of videos and stream URLs (rtsp://, http(s):// MJPEG or HLS, ...), `count` cameras "
        "each (relative paths from the current directory); empty: `dataset.path` (a video file, or a folder of "
        "videos read one after another)"))
    realtime: bool = Field(True, description=(
        "play each file at its own frame rate, as a camera delivers it (a file shorter than the run loops, its "
        "frames numbered on); false: a file is read as fast as the detector takes its frames and nothing is "
        "dropped. Streams always arrive at their own rate"))
    fps: Optional[float] = Field(None, gt=0.0, description=(
        "the cameras' frame rate: at most this many frames per second of each source's own timestamps go to the "
        "detector (every frame is still decoded, as a camera's decoder must); null: every frame, at the "
        "source's own rate"))
    when_busy: Literal["drop", "queue"] = Field(DROP, description=(
        "a new frame while the detector is busy: `drop` keeps only each camera's newest pending frame (an older "
        "pending one is dropped when a newer arrives, as Frigate does); `queue` keeps up to `queue_frames` per "
        "camera and drops the newest when full"))
    queue_frames: int = Field(4, ge=1, description="`when_busy: queue`: the frames each camera keeps waiting")
    detector: Literal["shared", "per_stream"] = Field(SHARED, description=(
        "`shared`: one detector takes the first waiting frame, then whatever else waits on any camera, up to "
        "`dataset.batch_size` (as Frigate and DeepStream batch); `per_stream`: one detector thread per camera "
        "calling the same pipeline, which needs `runtime.streams` of at least the number of cameras"))
    duration_s: float = Field(10.0, gt=0.0, description=(
        "the measured window, in seconds; it ends sooner when every source has ended"))
    warmup_s: float = Field(2.0, ge=0.0, description=(
        "seconds the cameras run before the window opens: their frames are detected, never measured"))
    decoder_threads: int = Field(1, ge=0, description=(
        "each camera's decoder threads (0: FFmpeg picks one per core); 1 leaves the cores to the detector"))
    connect_timeout_s: float = Field(10.0, gt=0.0, description="streams: the bound on opening one, in seconds")
    read_timeout_s: float = Field(5.0, gt=0.0, description="streams: the bound on each wait for data, in seconds")
    reconnects: int = Field(3, ge=0, description=(
        "streams: attempts to open a stream again after it stalls or ends, per gap"))
    reconnect_delay_s: float = Field(1.0, ge=0.0, description="streams: the wait before each attempt, in seconds")
    rtsp_transport: Literal["tcp", "udp"] = Field("tcp", description=(
        "rtsp:// streams: `tcp` loses no packets (as NVRs advise); `udp` for cameras that offer nothing else"))
    clip_frames: int = Field(60, ge=0, description=(
        "the annotated clip of the run folder (`cameras.mp4`): the first camera's first frames detected in the "
        "window, at most this many (and at most 192 MiB of them kept), drawn and encoded after the window closes; "
        "0: no clip"))

    @model_validator(mode="after")
    def _sources_named(self) -> "CamerasSection":
        for index, source in enumerate(self.sources):
            if not source.strip():
                raise ValueError(f"cameras.sources[{index}] is empty; give a video file or a stream URL")
        return self

    @property
    def camera_count(self) -> int:
        return max(len(self.sources), 1) * self.count


class ProfilingSection(_Section):
    """Below the layer: what the timed passes spend in Python and native code, the kernels that ran, the CPU's
    counters, and ITT tasks for VTune (docs/below-the-layer.md)."""

    sampler: Optional[Literal["py-spy"]] = Field(None, description=(
        "`py-spy`: sample the timed passes with native frames; where each step's time went goes to "
        "`native_time.csv` and the console; null: off"))
    rate: int = Field(10, ge=1, le=1000, description=(
        "samples per second; py-spy holds the run still for each native sample, so the tax grows with the rate "
        "(`benchmarks/overhead/sampling_tax.py` measures it; docs/below-the-layer.md)"))
    counters: bool = Field(True, description=(
        "the CPU's counters per timed pass and thread (context switches, faults, CPU time; cycles, instructions, "
        "LLC misses where the kernel allows) into `cpu_counters.csv`"))
    kernels: bool = Field(True, description=(
        "torch: one extra, untimed batch with oneDNN's verbose output, naming each convolution's kernel in "
        "`layer_timer.csv`"))
    itt: bool = Field(False, description="steps and layers of the timed passes as ITT tasks, for VTune")


# Where MLflow can track to: a database or a tracking server. Its folder store (a path or file://) is refused by
# MLflow 3 unless MLFLOW_ALLOW_FILE_STORE is set, so it is not offered.
MLFLOW_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https")


class MlflowSection(_Section):
    """Logging the complete run to an MLflow store."""

    tracking_uri: Optional[str] = Field(None, description=(
        "log the complete run to this MLflow store: `sqlite:///outputs/mlflow.db` or `http://HOST:5000`; null: "
        "off (see [tracking.md](tracking.md))"))
    experiment: str = Field("detbench", min_length=1, description=(
        "the MLflow experiment the run goes to (created when missing)"))

    @field_validator("tracking_uri")
    @classmethod
    def _trackable(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return value
        if not value.strip():
            raise ValueError("is empty; set a store such as sqlite:///outputs/mlflow.db, or remove the key")
        scheme = value.partition("://")[0].lower() if "://" in value else "file"
        if scheme.split("+")[0] not in MLFLOW_SCHEMES:
            kind = "a folder selects MLflow's file store, which MLflow 3 refuses" if scheme == "file" else \
                f"scheme {scheme!r} is not a store MLflow tracks to"
            raise ValueError(f"{kind}; use sqlite:///outputs/mlflow.db (a database file), http://HOST:5000 (an "
                             "`mlflow server`) or a database URI (postgresql://, mysql://)")
        if scheme == "sqlite" and not value.partition("://")[2].lstrip("/"):
            raise ValueError("a sqlite URI needs a database file: sqlite:///relative/path.db or sqlite:////absolute/path.db")
        if importlib.util.find_spec("mlflow") is None:
            raise ValueError("MLflow is not installed in this environment: pip install mlflow (or pip install -e "
                             "\".[mlflow]\"), or remove outputs.mlflow.tracking_uri")
        return value


class OutputsSection(_Section):
    """Which files beyond the CSVs and summary.json a run writes."""

    save_images: bool = Field(True, description="write annotated copies to `images/`")
    plots: bool = Field(True, description="write PNG plots to `plots/`")
    tensorboard: bool = Field(False, description=(
        "write TensorBoard event files to `tensorboard/` (see [tracking.md](tracking.md))"))
    mlflow: MlflowSection = MlflowSection()
    report: bool = Field(True, description=(
        "write `report.html`, the run on one self-contained page (see [outputs.md](outputs.md#reporthtml))"))


SHARED_SECTIONS = {"model": SharedModel, "preprocess": SharedPreprocess, "postprocess": SharedPostprocess}


def family_keys(arch: str, section: str) -> tuple[str, ...]:
    """The keys of the model, preprocess or postprocess section the family of `arch` reads: the shared ones, then its
    own."""
    return (*SHARED_SECTIONS[section].model_fields,
            *getattr(facts_for(arch), section.capitalize(), BaseModel).model_fields)


def _set_default(section: BaseModel, key: str, value: Any) -> None:
    """A default filled in after validation, past validate_assignment (which would run the validators again) and
    without marking the key as the user's."""
    section.__dict__[key] = copy.deepcopy(value)


class Config(_Section):
    """A run's configuration: one YAML file, validated once at start-up."""

    run: RunSection = RunSection()
    dataset: DatasetSection
    model: ModelSection = ModelSection()
    runtime: RuntimeSection = RuntimeSection()
    preprocess: PreprocessSection = PreprocessSection()
    postprocess: PostprocessSection = PostprocessSection()
    benchmark: BenchmarkSection = BenchmarkSection()
    profiling: ProfilingSection = ProfilingSection()
    outputs: OutputsSection = OutputsSection()
    cameras: CamerasSection = CamerasSection()

    @model_validator(mode="after")
    def _streams_need_a_scenario(self) -> "Config":
        if self.runtime.streams != AUTO and self.runtime.streams > 1 and self.benchmark.scenario == SINGLE_STREAM:
            raise ValueError(f"runtime.streams {self.runtime.streams} needs requests to keep in flight: "
                             "benchmark.scenario single_stream runs one batch after another; set "
                             "benchmark.scenario offline, server or multi_stream (or cameras with cameras.detector "
                             "per_stream), or runtime.streams 1")
        return self

    @model_validator(mode="after")
    def _cameras_fit_the_runtime(self) -> "Config":
        """What only the cameras and the runtime together decide; the sources themselves are checked at start."""
        if self.benchmark.scenario != CAMERAS:
            return self
        cameras, streams = self.cameras, self.runtime.streams
        if cameras.detector == SHARED and streams != 1:
            raise ValueError(f"runtime.streams {streams} with cameras.detector shared: one detector keeps one "
                             "request in flight, and more streams would only split its threads; set "
                             "runtime.streams 1, or cameras.detector per_stream")
        if cameras.detector == PER_STREAM and streams != AUTO and streams < cameras.camera_count:
            raise ValueError(f"cameras.detector per_stream runs {cameras.camera_count} detector(s) at once, one per "
                             f"camera, but runtime.streams is {streams}: detectors would share a stream's threads; "
                             f"set runtime.streams {cameras.camera_count} (runtime.threads at least as many), or "
                             "cameras.detector shared")
        if quantizes(self.runtime.precision) and self.runtime.calibration.path is None:
            raise ValueError(f"runtime.precision {self.runtime.precision} calibrates on images, and a camera run "
                             "reads video: set runtime.calibration.path to a folder of images like the cameras' "
                             "frames")
        return self

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        for old, new in renamed_in(data):
            value = data[old.partition(".")[0]][old.partition(".")[2]]
            raise ValueError(f"{old} is now {new}, one name in every detector family: rename it (e.g. --set "
                             f"{new}={shown(value)})")
        return data

    @model_validator(mode="after")
    def _settings_of_the_family(self, info: ValidationInfo) -> "Config":
        """Each family keeps to its own keys; every shared key left null takes the architecture's default."""
        source = self.model.network
        facts = facts_for(source)
        # The family's own config helps only where the config file brought the key (not --set), and is not it.
        said = (info.context or {}).get(COMMAND_LINE_KEYS, ())
        made_for = getattr(facts, "CONFIG", None)
        for section in SHARED_SECTIONS:
            keys = family_keys(source, section)
            for key in sorted(getattr(self, section).model_fields_set):
                if key not in keys:
                    owners = [other.NAME for other in FACTS
                              if key in getattr(other, section.capitalize(), BaseModel).model_fields]
                    start_from = made_for and f"{section}.{key}" not in said and \
                        Path(made_for).name != Path((info.context or {}).get(CONFIG_FILE, "")).name
                    raise ValueError(
                        f"{section}.{key} belongs to the {' and '.join(owners)} famil{'ies' if len(owners) > 1 else 'y'} "
                        f"and does not apply to {self.model.named} ({facts.NAME} family); remove it, or "
                        f"use {', '.join(section + '.' + k for k in keys)}"
                        + (f", or start from {made_for}, made for it" if start_from else ""))
        try:
            defaults = facts.defaults(source, self.model)
        except UsageError as error:  # a model.file that cannot run: the message names it and the fix
            raise ValueError(str(error)) from None
        for section, values in (("preprocess", defaults.preprocess), ("postprocess", defaults.postprocess)):
            for key, value in values.items():
                if getattr(getattr(self, section), key) is None:
                    _set_default(getattr(self, section), key, value)
        accuracy, evaluation = self.benchmark.accuracy, defaults.evaluation
        if evaluation.multi_label is None and accuracy.multi_label is not None:
            raise ValueError(f"benchmark.accuracy.multi_label does not apply to {self.model.named} "
                             f"({facts.NAME} family): it keeps every class above the cut per candidate by "
                             "construction; remove it")
        for key in EVALUATION_KEYS:
            if getattr(accuracy, key) is None:
                _set_default(accuracy, key, getattr(evaluation, key))
        if self.runtime.calibration.keep_float is None:
            _set_default(self.runtime.calibration, "keep_float", list(defaults.keep_float))
        for key, why in defaults.inapplicable.items():
            section, _, name = key.partition(".")
            if name in getattr(self, section).model_fields_set:
                raise ValueError(f"{key} does not apply to {self.model.named}: {why}; remove {key}")
        if self.postprocess.max_det == NO_CAP and not defaults.keeps_all:
            raise ValueError(f"postprocess.max_det {NO_CAP} (no cap) does not apply to {self.model.named}: it keeps at "
                             f"most a number of detections; set one (its own: {defaults.postprocess.get('max_det')})")
        problem = facts.settings_problem(source, self.preprocess, self.dataset.batch_size)
        if problem:
            raise ValueError(problem)
        # Refused here, once: a sweep or tune point that cannot run is known before anything runs.
        refusal = runtime_refusal(facts, self.runtime, source)
        if refusal is not None:
            raise ValueError(refusal)
        return self

    @property
    def reads_image_folder(self) -> bool:
        """Whether dataset.path names the run's items (a folder of images or videos, or a video file), checked before
        anything heavy loads; a camera run reads video files and streams as cameras, looked at when they are built."""
        return self.benchmark.scenario != CAMERAS

    def family_sections(self) -> dict[str, Any]:
        """The config as data, preprocess and postprocess holding only the keys the model's family reads."""
        data = self.model_dump(mode="json")
        for section in SHARED_SECTIONS:
            keys = family_keys(self.model.network, section)
            data[section] = {key: value for key, value in data[section].items() if key in keys}
        return data


def config_for(arch: str, **sections: Any) -> Config:
    """A configuration of `arch` with every default resolved, for code that builds a pipeline without a config
    file (scripts, tests); `sections` as data, e.g. preprocess={"img_size": 320}."""
    return Config.model_validate({"dataset": {"path": "."}, "model": {"arch": arch}, **sections})


def apply_override(data: dict, assignment: str) -> tuple[str, ...]:
    """Apply one `dotted.key=value` override in place (the value is parsed as YAML); returns the key path."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {shown(assignment)}: expected dotted.key=value, e.g. --set dataset.batch_size=4")
    try:
        value = strict_yaml.load(raw) if raw.strip() else None
    except strict_yaml.StrictYamlError as exc:
        raise ConfigError(f"--set {shown(assignment)}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {shown(assignment)}: the value {shown(raw)} is not valid YAML "
                          f"({clipped(yaml_error(exc, raw))}); fix its syntax, or quote it to pass text: "
                          f"--set '{shown(key.strip(), 60)[1:-1]}=\"...\"'") from None
    parts = key.strip().split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise ConfigError(f"--set {shown(assignment)}: {shown(where)[1:-1]} is a value, not a section")
        node = child
    node[parts[-1]] = value
    return tuple(parts)


def load_config(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read, override and validate a config file; every problem becomes one ConfigError."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"--config {path} is a folder, not a file; pass --config with a YAML file, e.g. "
                          "configs/samples.yaml")
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass --config with a file from configs/")
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is {path.stat().st_size:,} bytes, more than a config can need "
                          f"({MAX_CONFIG_BYTES:,} at most); pass --config with a file from configs/")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not a text YAML file (not UTF-8); pass --config with a file "
                          "from configs/") from None
    try:
        data = strict_yaml.load(text) or {}
    except strict_yaml.StrictYamlError as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {clipped(yaml_error(exc, text))}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections (run, dataset, model, ...)")
    overridden: dict[tuple[str, ...], str] = {}
    for assignment in overrides:
        key_path = apply_override(data, assignment)
        overridden.pop(key_path, None)  # re-insert, so the latest --set of a key is found first
        overridden[key_path] = assignment
    said = {".".join(key_path) for key_path in overridden}
    try:
        config = Config.model_validate(data, context={CONFIG_FILE: str(path), COMMAND_LINE_KEYS: said})
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, str(path), overridden, Config)) from None
    if config.run.id is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        config.run.id = f"{stamp}_{path.stem}"
    return config


def config_to_yaml(config: Config) -> str:
    return yaml.safe_dump(config.family_sections(), sort_keys=False)
