"""What the capacity command runs, as plain settings: the request (its bounds, time, source and images) and the
benchmark.py `--set` arguments of each kind of run it starts. Pure: nothing is run or read here.

Three kinds of run, each a normal benchmark.py run in the capacity directory:
- a point: N cameras of the source at its own rate (realtime), for the search over N;
- a flat-out run: FLAT_OUT_CAMERAS cameras of a file read as fast as the detector takes its frames (realtime off,
  nothing dropped), whose frames detected per second race the ways of computing, decode included (a live stream
  cannot be read faster than it comes: its race runs STREAM_PROBE x the bound's cameras at their own rate, where
  the detector is saturated and what it detects is what it can serve);
- a check: the way's accuracy judged on images (single_stream, as tune judges it), once per way of computing.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Optional

from utils.commands.capacity.point import Bounds
from utils.commands.tune.driver import LEAN, NO_CHECK
from utils.core.errors import UsageError

SCENARIO = "benchmark.scenario"
FLAT_OUT_CAMERAS = 2  # two decoders beside the detector, as N cameras have
FLAT_OUT_WARMUP_S = 1.0
STREAM_PROBE = 2.0  # a stream's race: this many times the cameras the bound allows, so the detector is saturated
# Keys the command sets on every camera run itself, and the flag that says them instead.
OWNED = {SCENARIO: "the command chooses each run's scenario", "cameras.count": "the search sets N",
         "cameras.sources": "--source", "dataset.path": "--source (the cameras) and --images (the checks)",
         "cameras.realtime": "points run in real time, the race flat out", "cameras.duration_s": "--point-s",
         "cameras.warmup_s": "--warmup-s", "cameras.fps": "--fps"}
DEFAULT_BUDGET_MS = 250.0
DEFAULT_MAX_DROP = 0.01
DEFAULT_MINUTES = 20.0
DEFAULT_POINT_S = 10.0
DEFAULT_WARMUP_S = 2.0
MAX_POINT_S = 4 * DEFAULT_POINT_S  # an unsteady point runs again twice as long, up to this


@dataclass
class CapacityRequest:
    config_file: str
    overrides: list[str]
    sweeps: list[str]
    budget_ms: float = DEFAULT_BUDGET_MS
    max_drop: float = DEFAULT_MAX_DROP
    minutes: float = DEFAULT_MINUTES
    source: Optional[str] = None  # None: the config's dataset.path (or its one cameras.sources entry)
    fps: Optional[float] = None  # None: every frame of the source
    images: Optional[str] = None  # where each way's accuracy is judged; None: the config's dataset.path if images
    point_s: float = DEFAULT_POINT_S
    warmup_s: float = DEFAULT_WARMUP_S

    @property
    def bounds(self) -> Bounds:
        return Bounds(self.budget_ms, self.max_drop)

    def document(self) -> dict:
        return asdict(self)

    @classmethod
    def from_document(cls, data: dict) -> "CapacityRequest":
        return cls(**data)


def refuse_owned(overrides: list[str], sweeps: list[str]) -> None:
    """A --set or --sweep of a key the command sets itself is a mistake, named with the flag to use."""
    for flag, items in (("--set", overrides), ("--sweep", sweeps)):
        for item in items:
            key = item.partition("=")[0].strip()
            if key in OWNED:
                raise UsageError(f"{flag} {item}: capacity sets {key} itself ({OWNED[key]}); drop it")


def _sets(items: list[str]) -> list[str]:
    return [part for item in items for part in ("--set", item)]


def arguments(request: CapacityRequest, sets: list[str], run_id: str) -> list[str]:
    """benchmark.py's arguments: the config and the `--set`s in order (a later one wins), the run's id last (the
    user's run.id and run.output_dir name the capacity directory; the launcher puts each run inside it)."""
    return ["--config", request.config_file, *_sets([*sets, f"run.id={json.dumps(run_id)}"])]


def _cameras(source: str, count: int, fps: Optional[float]) -> list[str]:
    # JSON strings are YAML strings: the source stays text whatever characters it holds.
    return [f"{SCENARIO}=cameras", f"cameras.sources={json.dumps([source])}", f"cameras.count={count}",
            *([f"cameras.fps={fps:g}"] if fps else [])]


def point_sets(request: CapacityRequest, source: str, candidate: list[str], count: int, duration_s: float) -> list[str]:
    """N cameras of the source at its own rate, the window `duration_s` after the request's warm-up."""
    return [*LEAN, *request.overrides, *candidate, *_cameras(source, count, request.fps),
            "cameras.realtime=true", f"cameras.duration_s={duration_s:g}", f"cameras.warmup_s={request.warmup_s:g}"]


def flat_out_sets(request: CapacityRequest, source: str, candidate: list[str]) -> list[str]:
    """FLAT_OUT_CAMERAS cameras of a file, read as fast as the detector takes them, for at most a point's window
    (a file read once ends sooner)."""
    return [*LEAN, *request.overrides, *candidate, *_cameras(source, FLAT_OUT_CAMERAS, request.fps),
            "cameras.realtime=false", f"cameras.duration_s={request.point_s:g}",
            f"cameras.warmup_s={FLAT_OUT_WARMUP_S:g}"]


def stream_probe(bound: Optional[float]) -> int:
    """The cameras a live stream's race runs: STREAM_PROBE x the bound, two at least."""
    return max(2, math.ceil(STREAM_PROBE * bound)) if bound else 2


def check_sets(request: CapacityRequest, images: str, candidate: list[str], checks: bool,
               images_found: int) -> list[str]:
    """The way on images, single_stream: with its accuracy check (scoring up to every image), or without it to
    compare its detections with the way's judged run."""
    scoring = [f"benchmark.accuracy.max_images={max(1, images_found)}"] if checks else list(NO_CHECK)
    return [*LEAN, *scoring, "benchmark.repeats=1", *request.overrides, *candidate, f"{SCENARIO}=single_stream",
            f"dataset.path={json.dumps(images)}"]
