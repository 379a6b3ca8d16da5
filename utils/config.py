"""The run configuration: schema, YAML loading, --set overrides and readable validation errors."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

BUILTIN_ARCHS = ("yolov7", "yolov7-tiny")


class ConfigError(Exception):
    """A user's configuration mistake; the message says what and how to fix it."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class RunSection(_Section):
    id: Optional[str] = Field(None, description="run directory name; default <UTC timestamp>_<config name>")
    output_dir: str = "outputs"
    seed: int = 0

    @field_validator("id")
    @classmethod
    def _plain_name(cls, value: Optional[str]) -> Optional[str]:
        if value is not None and (not value.strip() or "/" in value or "\\" in value or value in (".", "..")):
            raise ValueError("must be a plain directory name (no slashes, not empty)")
        return value


class DatasetSection(_Section):
    path: str
    limit: Optional[int] = Field(None, ge=1)
    batch_size: int = Field(1, ge=1)
    workers: int = Field(1, ge=0)


class ModelSection(_Section):
    arch: str = "yolov7"
    weights: Optional[str] = None
    fuse: bool = True
    threads: Optional[int] = Field(None, ge=1)

    @field_validator("arch")
    @classmethod
    def _known_arch(cls, value: str) -> str:
        if value in BUILTIN_ARCHS or value.endswith((".yaml", ".yml")):
            return value
        raise ValueError(f"must be one of {', '.join(BUILTIN_ARCHS)} or a path to a model-definition .yaml file")


class PreprocessSection(_Section):
    img_size: int = Field(640, ge=32)
    rect: bool = False
    pad_value: int = Field(114, ge=0, le=255)

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


class BenchmarkSection(_Section):
    warmup: int = Field(1, ge=0)
    repeats: int = Field(1, ge=1)
    min_time_s: float = Field(0.0, ge=0.0)
    layer_timing: bool = True
    layer_timing_batches: Optional[int] = Field(None, ge=1)
    profiler: bool = False
    energy: EnergySection = EnergySection()
    memory: MemorySection = MemorySection()


class OutputsSection(_Section):
    save_images: bool = True
    plots: bool = True


class Config(_Section):
    run: RunSection = RunSection()
    dataset: DatasetSection
    model: ModelSection = ModelSection()
    preprocess: PreprocessSection = PreprocessSection()
    postprocess: PostprocessSection = PostprocessSection()
    benchmark: BenchmarkSection = BenchmarkSection()
    outputs: OutputsSection = OutputsSection()


def apply_override(data: dict, assignment: str) -> None:
    """Apply one `dotted.key=value` override in place; the value is parsed as YAML."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {assignment!r}: expected dotted.key=value, e.g. --set dataset.batch_size=4")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {assignment!r}: the value is not valid YAML ({exc.problem})") from None
    parts = key.strip().split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            where = ".".join(parts[: depth + 1])
            raise ConfigError(f"--set {assignment!r}: {where} is a value, not a section")
        node = child
    node[parts[-1]] = value


def _describe_errors(error: ValidationError, source: str) -> str:
    lines = [f"invalid configuration in {source}:"]
    for item in error.errors():
        path = ".".join(str(p) for p in item["loc"])
        if item["type"] == "extra_forbidden":
            lines.append(f"  {path}: unknown key (value {item['input']!r}); check its spelling against the README")
        elif item["type"] == "missing":
            lines.append(f"  {path}: required key is missing")
        else:
            message = item["msg"].removeprefix("Value error, ")
            lines.append(f"  {path}: {message} (got {item['input']!r})")
    return "\n".join(lines)


def load_config(path: str | Path, overrides: list[str] = ()) -> Config:
    """Read, override and validate a config file; every problem becomes one ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist; pass --config with a file from configs/")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping of sections (run, dataset, model, ...)")
    for assignment in overrides:
        apply_override(data, assignment)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_describe_errors(exc, str(path))) from None
    if config.run.id is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        config.run.id = f"{stamp}_{path.stem}"
    return config


def config_to_yaml(config: Config) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
