"""The parity benchmark's command line (benchmarks/peers/yolov7_official_parity.py runs it): the arguments, the setup of
the peer and the weights, the rounds, and the report with its files."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

import benchmarks.peers.yolov7_official as parity
from benchmarks.peers.yolov7_official.facts import CONF_THRES, PEER_CFG, PEER_LICENSE, PEER_REQUIREMENT, PEER_WHEEL
from benchmarks.peers.yolov7_official.peer_setup import default_cache_dir, ensure_official_venv, ensure_wheel
from benchmarks.peers.yolov7_official.results import (REFERENCE, evaluate_goals, format_goals, format_table,
                                                      median_or_none)
from benchmarks.peers.yolov7_official.rounds import Setup, load_average, run_rounds
from benchmarks.peers.yolov7_official.specs import PROJECT_ROOT, configurations, parse_runtime_spec
from benchmarks.peers.yolov7_official.weights import ensure_weights
from utils.core.errors import ExitStatus, UsageError

DEFAULT_CONFIG = "configs/samples.yaml"
DEFAULT_IMAGES = "datasets/samples"


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
    parser = argparse.ArgumentParser(description=parity.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=positive_int, default=3,
                        help="interleaved rounds (official, torch:fp32, each --runtime; every other round in reverse "
                             "order); default 3")
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
                        help="the wheel, the official code's own venv and the weights; default "
                             "$XDG_CACHE_HOME/detbench/official_parity or ~/.cache/detbench/official_parity")
    parser.add_argument("--wheel", type=Path, default=None,
                        help=f"use this local {PEER_WHEEL} instead of downloading it (sha256 checked)")
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="where this run's files go; default outputs/official_parity/<UTC time>")
    parser.add_argument("--timeout", type=positive_int, default=3600,
                        help="seconds one subprocess (a peer round or a detbench run) may take; default 3600")
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace) -> Setup:
    cache = (args.cache_dir or default_cache_dir()).resolve()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = (args.output_dir or PROJECT_ROOT / "outputs" / "official_parity" / stamp).resolve()
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"--output-dir {out} exists and is not empty; choose another")
    images_root = Path(args.images)
    if not images_root.is_absolute():
        images_root = PROJECT_ROOT / images_root
    args.images = str(images_root)
    config = Path(args.config)
    args.config = str(config if config.is_absolute() else PROJECT_ROOT / config)
    if not Path(args.config).is_file():
        raise UsageError(f"--config {args.config}: no such file")
    from datasets.image_folder import find_images  # OpenCV and torch: only once the arguments are checked

    paths = find_images(args.images)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    wheel = ensure_wheel(cache, args.wheel, out / "logs")
    peer_python = ensure_official_venv(cache, wheel)
    weights, info = ensure_weights(cache, args.arch, args.seed, args.img_size, args.candidates, paths, args.threads,
                                   args.recalibrate)
    (out / "calibration.json").write_text(json.dumps({"weights": str(weights), **info}, indent=1))
    names = [path.relative_to(images_root).as_posix() for path in paths]
    image_list = out / "images.json"
    image_list.write_text(json.dumps([[str(path), name] for path, name in zip(paths, names)]))
    return Setup(args, out, peer_python, weights, image_list, names, configurations(args.runtimes))


def allocator_environment(environ: Mapping[str, str]) -> str:
    """The malloc settings both sides inherit, in words."""
    settings = [f"{key}={environ[key]}" for key in sorted(environ)
                if key in ("GLIBC_TUNABLES", "LD_PRELOAD") or key.startswith("MALLOC_")]
    return ", ".join(settings) if settings else "the C library's defaults (no GLIBC_TUNABLES, MALLOC_* or LD_PRELOAD)"


def report(setup: Setup, results: dict, info: dict, seconds: float, load_before: str) -> str:
    args = setup.args
    rows = results["rows"]
    goals = evaluate_goals(rows)
    official = results["rounds"][REFERENCE]
    detections = median_or_none(r.detections for r in official)
    lines = [
        f"yolov7_official_parity: {args.arch} at {args.img_size} (rect), batch 1, {args.threads} threads, "
        f"{len(setup.image_names)} images, {args.rounds} interleaved rounds, each side: warm-up "
        f"{'of every input shape' if args.warmup == 'auto' else f'of {args.warmup} image(s)'} then "
        f"{args.repeats} timed passes",
        f"weights: seed {args.seed}, calibrated (bias shift {info['bias_shift']:+.3f}, median "
        f"{args.candidates} candidates over conf {CONF_THRES}); sha256 {info['sha256'][:16]}...",
        f"official loop: {PEER_REQUIREMENT} ({PEER_LICENSE}), detect.py steps, fused, eager; "
        f"{detections if detections is not None else '-'} detections over the images per round",
        "images/s: pipeline only (read + letterbox + forward + NMS + scale), images / total time over the timed "
        "passes; x official: median of per-round ratios; spread: (max - min) / median over rounds",
        f"malloc, both sides: {allocator_environment(os.environ)}",
        "",
        format_table(rows),
        "",
        "goals:",
        format_goals(goals),
        "",
        f"took {seconds / 60:.1f} min; load average (1/5/15 min) before {load_before}, after {load_average()} on "
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
    started = time.perf_counter()
    load_before = load_average()
    try:
        setup = prepare(args)
        info = json.loads((setup.out / "calibration.json").read_text())
        print(f"weights: {setup.weights} (bias shift {info['bias_shift']:+.3f}; candidates per calibration "
              f"image {info['candidates_per_image']})\nfiles: {setup.out}", flush=True)
        results = run_rounds(setup)
    except KeyboardInterrupt:
        print("interrupted; the files written so far are kept", file=sys.stderr)
        raise
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
    return ExitStatus.OK
