"""One detbench configuration of the parity benchmark: its runtime spec, its benchmark.py command line, and how
a configuration that did not complete is reported."""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, Union

from benchmarks.common.detbench_runs import benchmark_command
from benchmarks.peers.yolov7_official.facts import CONF_THRES, IOU_THRES
from utils.core.errors import ExitStatus

PROJECT_ROOT = Path(__file__).resolve().parents[3]
TORCH_FP32 = "torch:fp32"
SPEC_PATTERN = re.compile(r"^(?P<backend>[a-z][a-z0-9_]*):(?P<precision>[a-z][a-z0-9]*)(?::(?P<flags>[a-z_,]+))?$")
SPEC_FLAGS = ("channels_last", "compile")


@dataclass(frozen=True)
class RuntimeSpec:
    """One detbench configuration: runtime.backend, runtime.precision and optional torch flags."""

    backend: str
    precision: str
    flags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        base = f"{self.backend}:{self.precision}"
        return f"{base}:{','.join(self.flags)}" if self.flags else base

    @property
    def run_name(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", self.label)

    def overrides(self) -> list[str]:
        sets = [f"runtime.backend={self.backend}", f"runtime.precision={self.precision}"]
        sets += [f"runtime.{flag}=true" for flag in self.flags]
        return sets


def parse_runtime_spec(text: str) -> RuntimeSpec:
    """'backend:precision[:flag,flag]' -> RuntimeSpec; flags: channels_last, compile. Backend and precision are
    passed to detbench as they are, so a backend detbench does not know ends as "not available"."""
    match = SPEC_PATTERN.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not backend:precision[:flags] (e.g. onnxruntime:fp32, openvino:bf16, "
            f"torch:bf16:channels_last)")
    flags = tuple(match["flags"].split(",")) if match["flags"] else ()
    unknown = [flag for flag in flags if flag not in SPEC_FLAGS]
    if unknown or len(set(flags)) != len(flags) or "" in flags:
        raise argparse.ArgumentTypeError(f"{text!r}: flags must be distinct, from {', '.join(SPEC_FLAGS)}")
    return RuntimeSpec(match["backend"], match["precision"], tuple(sorted(flags)))


def configurations(extra: Sequence[RuntimeSpec]) -> list[RuntimeSpec]:
    """torch:fp32 first, then the --runtime configurations in the order given, each once."""
    ordered = [parse_runtime_spec(TORCH_FP32)]
    for spec in extra:
        if spec not in ordered:
            ordered.append(spec)
    return ordered


def detbench_command(python: str, config: str, weights: Path, output_dir: Path, run_id: str, spec: RuntimeSpec,
                     threads: int, images: str, img_size: int, warmup: Union[str, int], repeats: int, arch: str,
                     extra_sets: Sequence[str] = ()) -> list[str]:
    """The benchmark.py command line of one detbench configuration in one round (run from the project root)."""
    sets = [
        f"model.weights={weights}", "preprocess.rect=true", "dataset.batch_size=1", f"runtime.threads={threads}",
        "benchmark.layer_timing=false", "benchmark.profiler=false", f"run.output_dir={output_dir}",
        f"run.id={run_id}",
        # the same images, model and plan as the official loop
        f"model.arch={arch}", f"dataset.path={images}", f"preprocess.img_size={img_size}",
        f"postprocess.conf_thres={CONF_THRES}", f"postprocess.iou_thres={IOU_THRES}",
        f"benchmark.warmup={warmup}", f"benchmark.repeats={repeats}",
        *spec.overrides(), *extra_sets,
    ]
    return benchmark_command(config, sets, python=python)


def failure_note(returncode: int, stderr: str) -> str:
    """How a configuration that did not complete is reported. Exit status 2 is detbench's "this cannot run"
    (config, inputs, runtime): "not available: <its error line>"; anything else: "failed (exit N): <line>"."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    line = (errors or lines or ["(no message)"])[-1]
    line = line if len(line) <= 240 else line[:237] + "..."
    if returncode == ExitStatus.USAGE:
        return f"not available: {line}"
    if returncode < 0:
        return f"failed (signal {-returncode}): {line}"
    return f"failed (exit {returncode}): {line}"
