"""The run configuration: schema, YAML loading, --set overrides and readable validation errors."""
from __future__ import annotations

import datetime as dt
import errno
import importlib.util
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

from utils import strict_yaml
from utils.bounded_text import clipped, shown

BUILTIN_ARCHS = ("yolov7", "yolov7-tiny")
# torchvision's two-stage detectors (pipelines/rcnn); the family module checks it builds exactly these.
RCNN_ARCHS = ("fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
              "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2")


class ConfigError(Exception):
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


class _Section(BaseModel):
    # Strict: YAML already types every value, so `true` or "4" where a number belongs is a mistake to report,
    # not a value to coerce (ints may still stand for floats). Infinity and NaN would make waits endless.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)


class RunSection(_Section):
    id: Optional[str] = Field(None, description="run directory name; default <UTC timestamp>_<config name>")
    output_dir: PathText = "outputs"
    seed: int = 0

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
MAX_LISTED_ERRORS = 20


class DatasetSection(_Section):
    path: PathText
    limit: Optional[int] = Field(None, ge=1)
    batch_size: int = Field(1, ge=1)
    workers: Optional[int] = Field(None, ge=0)  # None: a worker only where a core is left beside the threads
    max_pixels: Optional[int] = Field(DEFAULT_MAX_PIXELS, ge=1)  # None: no limit but the decoder's own
    labels: Optional[PathText] = None  # ground truth: a YOLO labels folder or a COCO json file (datasets/labels.py)


class ModelSection(_Section):
    arch: str = "yolov7"
    weights: Optional[PathText] = None
    fuse: bool = True

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
        if value in BUILTIN_ARCHS + RCNN_ARCHS:
            return value
        if value.endswith((".yaml", ".yml")):
            return _holdable_path(value)
        raise ValueError(f"must be one of {', '.join(BUILTIN_ARCHS + RCNN_ARCHS)} or a path to a model-definition "
                         ".yaml file")


class PreprocessSection(_Section):
    img_size: int = Field(640, ge=32)
    rect: bool = False
    pad_value: int = Field(114, ge=0, le=255)
    # rcnn: the shorter side is resized to min_size unless the longer would then exceed max_size
    min_size: int = Field(800, ge=32)
    max_size: int = Field(1333, ge=32)

    @field_validator("img_size")
    @classmethod
    def _multiple_of_stride(cls, value: int) -> int:
        if value % 32:
            raise ValueError("must be a multiple of 32 (the model's largest stride)")
        return value


class PostprocessSection(_Section):
    conf_thres: float = Field(0.25, ge=0.0, le=1.0)
    iou_thres: float = Field(0.45, ge=0.0, le=1.0)
    max_det: int = Field(300, ge=1)
    classes: Optional[list[int]] = None
    agnostic: bool = False
    multi_label: bool = False  # every class above conf_thres per box, not only the best (YOLOv7's test.py for mAP)
    # rcnn (torchvision's names and defaults; the rpn ones are the proposals kept per image at test time)
    box_score_thresh: float = Field(0.05, ge=0.0, le=1.0)
    box_nms_thresh: float = Field(0.5, ge=0.0, le=1.0)
    detections_per_img: int = Field(100, ge=1)
    rpn_pre_nms_top_n: int = Field(1000, ge=1)
    rpn_post_nms_top_n: int = Field(1000, ge=1)

    @field_validator("classes")
    @classmethod
    def _non_negative(cls, value: Optional[list[int]]) -> Optional[list[int]]:
        if value is not None and any(c < 0 for c in value):
            raise ValueError("class ids must be >= 0")
        return value


class EnergySection(_Section):
    enabled: bool = True
    idle_s: float = Field(0.0, ge=0.0)


class MemorySection(_Section):
    enabled: bool = True
    interval_s: float = Field(0.05, gt=0.0)


# Precisions each backend offers; the runtimes check what the CPU supports when they start.
BACKEND_PRECISIONS = {"torch": ("fp32", "bf16"), "onnxruntime": ("fp32", "int8"),
                      "openvino": ("fp32", "bf16", "int8")}
# Why a backend does not offer a precision, where there is more to say than "use another backend".
PRECISION_REFUSALS = {
    ("torch", "int8"): "torch int8 (PT2E with the X86 Inductor quantizer) starts from torch.export, which stops "
                       "at YOLOv7's Detect decode (its float(stride) is data-dependent), so it is not offered",
}


class CalibrationSection(_Section):
    images: int = Field(300, ge=1)  # the run's first N images (all when fewer) calibrate int8
    # Layers kept in float when quantizing, by name (a module path such as model.77, or an ONNX node name
    # prefix) or by type (Detect): the head's decode mixes pixel boxes and 0-1 scores no one int8 scale holds.
    keep_float: list[str] = ["Detect"]
    # A folder of images to calibrate on; None: the dataset's last images, which the scored passes then skip.
    path: Optional[PathText] = None


class RuntimeSection(_Section):
    backend: Literal["torch", "onnxruntime", "openvino"] = "torch"
    precision: Literal["fp32", "bf16", "int8"] = "fp32"
    channels_last: bool = False
    compile: bool = False
    threads: Optional[int] = Field(None, ge=1)
    cache_dir: Optional[PathText] = None  # exported models; None: $XDG_CACHE_HOME/detbench or ~/.cache/detbench
    calibration: CalibrationSection = CalibrationSection()
    streams: int = Field(1, ge=1)  # requests in flight at once, the threads split between them
    pinning: bool = False  # tie the compute threads to cores

    @model_validator(mode="after")
    def _possible_combination(self) -> "RuntimeSection":
        offered = BACKEND_PRECISIONS[self.backend]
        if self.precision not in offered:
            others = [b for b, p in BACKEND_PRECISIONS.items() if self.precision in p]
            hint = f"use runtime.backend {' or '.join(others)}" if others else "no backend offers it yet"
            reason = PRECISION_REFUSALS.get((self.backend, self.precision))
            raise ValueError(f"runtime.backend {self.backend} runs precision {', '.join(offered)}, not "
                             f"{self.precision}{' (' + reason + ')' if reason else ''}: {hint}")
        for key in ("channels_last", "compile"):
            if getattr(self, key) and self.backend != "torch":
                raise ValueError(f"runtime.{key} applies to runtime.backend torch only (got backend "
                                 f"{self.backend}); remove it or set runtime.backend: torch")
        return self


class AgreementSection(_Section):
    enabled: bool = True
    images: int = Field(8, ge=1)  # the first N images are run through the torch fp32 reference too
    top_k: int = Field(100, ge=1)  # candidates per image compared, ranked by the reference's score


class AccuracySection(_Section):
    """The accuracy pass: detections at mAP settings (YOLOv7's test.py: conf 0.001, IoU 0.65, 300 per image),
    apart from the timed passes."""

    enabled: bool = True
    images: Optional[int] = Field(None, ge=1)  # None: all images with labels, agreement.images without
    conf_thres: float = Field(0.001, ge=0.0, le=1.0)
    iou_thres: float = Field(0.65, ge=0.0, le=1.0)
    max_det: int = Field(300, ge=1)
    # Each box under every class that clears conf_thres, as YOLOv7's test.py suppresses for its mAP;
    # false: only its best class, as a deployment shows it.
    multi_label: bool = True
    # Without labels, an undecided verdict scores more images, up to this many (never the calibration ones).
    max_images: int = Field(300, ge=1)
    max_drop: float = Field(0.01, ge=0.0, le=1.0)  # mAP@0.5:0.95 drop a `within_budget` verdict allows
    bootstrap: int = Field(200, ge=0)  # resamples of the drop's interval over images (0: no interval)


SINGLE_STREAM = "single_stream"  # detbench's own passes; the others run under LoadGen
SCENARIOS = (SINGLE_STREAM, "multi_stream", "server", "offline")


class LoadgenSection(_Section):
    """MLPerf LoadGen's settings for the scenarios other than single_stream, in one place (as MLPerf's
    user.conf). Minimums are scaled for CPUs: MLPerf's own are 600 s and tens of thousands of queries."""

    mode: Literal["performance", "accuracy"] = "performance"
    min_duration_s: float = Field(10.0, gt=0.0)
    max_duration_s: Optional[float] = Field(None, gt=0.0)  # None: no bound beyond the minimums
    min_query_count: int = Field(64, ge=1)
    # How many of the dataset's images stay decoded in memory (LoadGen's performance sample count); None: all.
    performance_sample_count: Optional[int] = Field(None, ge=1)
    target_qps: Optional[float] = Field(None, gt=0.0)  # server: the arrival rate; offline: the expected rate
    target_latency_ms: Optional[float] = Field(None, gt=0.0)  # server: the latency bound
    target_latency_percentile: float = Field(0.99, gt=0.0, lt=1.0)
    samples_per_query: int = Field(8, ge=1)  # multi_stream
    find_peak: bool = False  # server: search the highest rate that meets the latency bound
    seed: int = Field(0, ge=0)  # LoadGen's sample-index and schedule seeds


class BenchmarkSection(_Section):
    # auto: one batch of each distinct input shape the timed passes will see (at most warmup_max_batches);
    # a number: that many first batches, as before.
    warmup: Union[Literal["auto"], int] = "auto"
    warmup_max_batches: int = Field(32, ge=1)
    repeats: int = Field(1, ge=1)
    min_time_s: float = Field(0.0, ge=0.0)
    # Keep adding timed passes until the 95% confidence half-width of the per-image median is under this
    # fraction (0.02 = +-2%), for at most max_time_s of measured time.
    target_ci: Optional[float] = Field(None, gt=0.0, lt=1.0)
    max_time_s: float = Field(600.0, gt=0.0)
    layer_timing: bool = True
    layer_timing_batches: Optional[int] = Field(None, ge=1)
    profiler: bool = False
    energy: EnergySection = EnergySection()
    memory: MemorySection = MemorySection()
    agreement: AgreementSection = AgreementSection()
    accuracy: AccuracySection = AccuracySection()
    scenario: Literal[SCENARIOS] = SINGLE_STREAM
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


# Where MLflow can track to: a database or a tracking server. Its folder store (a path or file://) is refused by
# MLflow 3 unless MLFLOW_ALLOW_FILE_STORE is set, so it is not offered.
MLFLOW_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql", "http", "https")


class MlflowSection(_Section):
    tracking_uri: Optional[str] = None  # None: runs are not logged to MLflow
    experiment: str = Field("detbench", min_length=1)

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
    save_images: bool = True
    plots: bool = True
    tensorboard: bool = False  # event files under <run dir>/tensorboard/
    mlflow: MlflowSection = MlflowSection()
    report: bool = True


# The preprocess and postprocess keys each detector family reads; another family's key is a mistake.
FAMILY_KEYS = {
    "yolo": {"preprocess": ("img_size", "rect", "pad_value"),
             "postprocess": ("conf_thres", "iou_thres", "max_det", "classes", "agnostic", "multi_label")},
    "rcnn": {"preprocess": ("min_size", "max_size"),
             "postprocess": ("box_score_thresh", "box_nms_thresh", "detections_per_img", "rpn_pre_nms_top_n",
                             "rpn_post_nms_top_n")},
}


def family_of(arch: str) -> str:
    return "rcnn" if arch in RCNN_ARCHS else "yolo"


class Config(_Section):
    run: RunSection = RunSection()
    dataset: DatasetSection
    model: ModelSection = ModelSection()
    runtime: RuntimeSection = RuntimeSection()
    preprocess: PreprocessSection = PreprocessSection()
    postprocess: PostprocessSection = PostprocessSection()
    benchmark: BenchmarkSection = BenchmarkSection()
    outputs: OutputsSection = OutputsSection()

    @model_validator(mode="after")
    def _streams_need_a_scenario(self) -> "Config":
        if self.runtime.streams > 1 and self.benchmark.scenario == SINGLE_STREAM:
            raise ValueError(f"runtime.streams {self.runtime.streams} needs requests to keep in flight: "
                             "benchmark.scenario single_stream runs one batch after another; set "
                             "benchmark.scenario offline, server or multi_stream, or runtime.streams 1")
        return self

    @model_validator(mode="after")
    def _keys_of_the_family(self) -> "Config":
        family = family_of(self.model.arch)
        for section in ("preprocess", "postprocess"):
            for key in sorted(getattr(self, section).model_fields_set):
                if key not in FAMILY_KEYS[family][section]:
                    owner = next(name for name, keys in FAMILY_KEYS.items() if key in keys[section])
                    raise ValueError(
                        f"{section}.{key} belongs to the {owner} family and does not apply to model.arch "
                        f"{self.model.arch} ({family} family); remove it, or use "
                        f"{', '.join(section + '.' + k for k in FAMILY_KEYS[family][section])}")
        return self

    def family_sections(self) -> dict[str, Any]:
        """The config as data, preprocess and postprocess holding only the keys the model's family reads."""
        data = self.model_dump(mode="json")
        keys = FAMILY_KEYS[family_of(self.model.arch)]
        for section in ("preprocess", "postprocess"):
            data[section] = {key: value for key, value in data[section].items() if key in keys[section]}
        return data


def _yaml_error(error: yaml.YAMLError, text: str) -> str:
    """'<problem> at line L, column C' from a PyYAML error, without PyYAML's '<unicode string>' placeholder."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        message = f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
        if error.context and error.context_mark is not None:
            start = error.context_mark
            message += f" ({error.context} that starts at line {start.line + 1}, column {start.column + 1})"
        return message
    if isinstance(error, yaml.reader.ReaderError):  # a character YAML does not allow
        line = text.count("\n", 0, error.position) + 1
        column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
        return f"character {chr(error.character)!r} is not allowed at line {line}, column {column}"
    return str(error)


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
                          f"({clipped(_yaml_error(exc, raw))}); fix its syntax, or quote it to pass text: "
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


def _origin(loc: tuple, overrides: dict[tuple[str, ...], str]) -> str | None:
    """The --set that put the value at `loc` there (the last one wins), or None when it came from the file."""
    path = tuple(str(part) for part in loc)
    for key_path, assignment in reversed(overrides.items()):
        depth = min(len(key_path), len(path))
        if key_path[:depth] == path[:depth]:
            return assignment
    return None


# Strict-mode type errors, said as what to write instead.
TYPE_HINTS = {
    "int_type": "must be a whole number written without quotes, e.g. 4",
    "float_type": "must be a number written without quotes, e.g. 0.5",
    "bool_type": "must be true or false, written without quotes",
    "string_type": "must be text; quote a value that YAML would read as a number or boolean, e.g. \"123\"",
}


def _describe_errors(error: ValidationError, source: str, overrides: dict[tuple[str, ...], str]) -> str:
    lines = []
    origins = []
    items = error.errors()
    for item in items[:MAX_LISTED_ERRORS]:
        path = clipped(".".join(str(p) for p in item["loc"]), 80)
        if item["type"] == "extra_forbidden":
            line = f"  {path}: unknown key (value {shown(item['input'])}); check its spelling against the README"
        elif item["type"] == "missing":
            line = f"  {path}: required key is missing"
        else:
            message = TYPE_HINTS.get(item["type"]) or item["msg"].removeprefix("Value error, ")
            # A whole section's input repeats what the message names already.
            got = "" if isinstance(item["input"], dict) else f" (got {shown(item['input'])})"
            line = f"  {path + ': ' if path else ''}{message}{got}"  # a whole-config check names its keys
        if isinstance(item["input"], dict):
            # A check of a whole section names its keys: blame the --set of a key it names, if any.
            named = [assignment for key_path, assignment in overrides.items() if ".".join(key_path) in line]
            origin = ", ".join(named) or None
        else:
            origin = _origin(item["loc"], overrides)
        origins.append(origin)
        lines.append(line if origin is None else f"{line} (from --set {clipped(origin)})")
    more = ([f"  ... and {len(items) - MAX_LISTED_ERRORS:,} more problems, listed once these are fixed"]
            if len(items) > MAX_LISTED_ERRORS else [])
    if all(origin is None for origin in origins):
        return "\n".join([f"invalid configuration in {source}:"] + lines + more)
    lines = [line if origin is not None else f"{line} (in {source})" for line, origin in zip(lines, origins)]
    return "\n".join(["invalid configuration:"] + lines + more)


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
        raise ConfigError(f"config file {path} is not valid YAML: {clipped(_yaml_error(exc, text))}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections (run, dataset, model, ...)")
    overridden: dict[tuple[str, ...], str] = {}
    for assignment in overrides:
        key_path = apply_override(data, assignment)
        overridden.pop(key_path, None)  # re-insert, so the latest --set of a key is found first
        overridden[key_path] = assignment
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe_errors(exc, str(path), overridden)) from None
    if config.run.id is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        config.run.id = f"{stamp}_{path.stem}"
    return config


def config_to_yaml(config: Config) -> str:
    return yaml.safe_dump(config.family_sections(), sort_keys=False)
