"""The parity benchmark's rounds: each runs the official loop (drivers/run_yolov7_detect.py, in the official code's
own venv), then every detbench configuration (benchmark.py, in its own process), interleaved so a shared machine's
drift spreads over all."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common.rounds import alternated
from benchmarks.peers import venvs
from benchmarks.peers.yolov7_official.facts import CONF_THRES, IOU_THRES, PEER_CFG
from benchmarks.peers.yolov7_official.peer_setup import SetupError, run_logged
from benchmarks.peers.yolov7_official.results import (REFERENCE, RoundResult, Row, agreement_counts,
                                                      read_detections_csv, summarize)
from benchmarks.peers.yolov7_official.specs import PROJECT_ROOT, RuntimeSpec, detbench_command, failure_note

PEER_PROGRAM = venvs.DRIVERS / "run_yolov7_detect.py"


@dataclass
class Setup:
    args: argparse.Namespace
    out: Path
    peer_python: Path  # the official code's own venv's
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
    command = [str(setup.peer_python), str(PEER_PROGRAM), "--weights", str(setup.weights),
               "--image-list", str(setup.image_list), "--out", str(out), "--threads", str(args.threads),
               "--warmup", str(args.warmup), "--repeats", str(args.repeats), "--img-size", str(args.img_size),
               "--cfg", PEER_CFG[args.arch], "--conf-thres", str(CONF_THRES), "--iou-thres", str(IOU_THRES)]
    env = venvs.peer_environment(os.environ)
    try:
        result = run_logged(command, setup.logs / f"r{round_index}-official.log", env=env, cwd=str(out.parent.parent),
                             timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return RoundResult(note=f"failed: timed out after {args.timeout} s"), None
    if result.returncode != 0:
        return RoundResult(note=failure_note(result.returncode, result.stderr)), None
    times = json.loads((out / "times.json").read_text())
    pipeline = times["pipeline"]
    return (RoundResult(pipeline["images_per_s"], pipeline["p50_ms_per_image"], pipeline["forward_p50_ms"],
                        times["detections"], faults_per_image=pipeline.get("minor_faults_per_image")),
            read_detections_csv(out / "detections.csv"))


def detbench_faults_per_image(summary: dict) -> float | None:
    """Minor page faults of the whole process over the timed passes, per timed image, from its CPU counters."""
    counters = summary.get("cpu_counters") or {}
    faults = [entry.get("minor_faults") for entry in counters.get("passes") or []]
    if not faults or None in faults or not summary.get("images_timed"):
        return None
    return sum(faults) / summary["images_timed"]


def run_detbench(setup: Setup, round_index: int, spec: RuntimeSpec) -> tuple[RoundResult, dict[str, list[Row]] | None]:
    args = setup.args
    run_id = f"r{round_index}-{spec.run_name}"
    output_dir = setup.out / "detbench"
    command = detbench_command(sys.executable, args.config, setup.weights, output_dir, run_id, spec, args.threads,
                               args.images, args.img_size, args.warmup, args.repeats, args.arch, args.detbench_set)
    try:
        result = run_logged(command, setup.logs / f"{run_id}.log", cwd=str(PROJECT_ROOT), timeout=args.timeout)
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
                        agreement.get("verdict"), faults_per_image=detbench_faults_per_image(summary)),
            read_detections_csv(output_dir / run_id / "detections.csv"))


def load_average() -> str:
    try:
        return "/".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "n/a"


def round_order(labels: list[str], index: int) -> list[str]:
    """The order in which round `index` (from 1) runs the sides: as given in odd rounds, reversed in even ones,
    so that neither side always runs first, just after the other's process has exited."""
    return alternated(labels, index - 1)


def run_rounds(setup: Setup) -> dict:
    args = setup.args
    labels = [REFERENCE] + [spec.label for spec in setup.specs]
    specs = {spec.label: spec for spec in setup.specs}
    rounds: dict[str, list[RoundResult]] = {label: [] for label in labels}
    counts: dict[str, Any] = {}
    unavailable: dict[str, str] = {}
    for index in range(1, args.rounds + 1):
        found: dict[str, dict[str, list[Row]]] = {}
        for label in round_order(labels, index):
            if label in unavailable:
                rounds[label].append(RoundResult(note=unavailable[label]))
                continue
            started = time.perf_counter()
            if label == REFERENCE:
                result, detections = run_official(setup, index)
                if detections is None:
                    raise SetupError(f"the official loop failed in round {index}: {result.note}; see "
                                     f"{setup.logs / f'r{index}-official.log'}")
            else:
                result, detections = run_detbench(setup, index, specs[label])
                if detections is None:
                    unavailable[label] = result.note or "failed"
            rounds[label].append(result)
            _progress(index, args.rounds, label, result, started)
            if detections is not None:
                found[label] = detections
        for label, detections in found.items():
            if label != REFERENCE:
                match = agreement_counts(found[REFERENCE], detections, setup.image_names)
                counts[label] = match if label not in counts else counts[label] + match
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
    print(f"round {index}/{total}  {label:<28} {text}  ({took:.0f} s, load {load_average()})", flush=True)
