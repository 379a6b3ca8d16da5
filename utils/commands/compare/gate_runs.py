"""The gate's figures read out of two finished runs, and the checks that the two runs may be gated at all."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from utils.commands.compare.gate import (Figure, block_figure, latency_figure, map_drop_figure, single_value_figure,
                                         throughput_figure)
from utils.config.schema import CAMERAS, SINGLE_STREAM
from utils.core.errors import UsageError
from utils.storage.finished_run import FinishedRun
from utils.record.steps import PIPELINE_STEP

METRICS = ("latency", "throughput", "map_drop", "peak_memory", "p99", "fps")
DEFAULT_METRICS = ("latency",)
MEMORY_FIGURES = ("peak_pss_mib", "peak_rss_mib")
BLOCK_S = 1.0  # a camera window's block: a second of arrivals


class GateError(UsageError):
    """Two runs the gate cannot judge, or a gate asked for wrongly (a user's mistake: exit status 2)."""


def scenario_of(run: FinishedRun) -> str:
    return run.get("scenario.name", SINGLE_STREAM)


def check_comparable(base: FinishedRun, new: FinishedRun) -> None:
    """Same model and same scenario, or a GateError naming what differs."""
    for what, first, second in (("model", base.get("model"), new.get("model")),
                                ("scenario", scenario_of(base), scenario_of(new))):
        if first != second:
            raise GateError(f"the runs differ in {what} ({base.name}: {first}, {new.name}: {second}); the gate "
                            f"compares two runs of the same {what}: pass a baseline run of {second}")


def _pipeline_batches(run: FinishedRun) -> tuple[list[float], list[int]]:
    timed = run.timed_steps()
    rows = timed[timed["step"] == PIPELINE_STEP]
    return rows["ms"].astype(float).tolist(), rows["images"].astype(int).tolist()


def _lacks(metric: str, run: FinishedRun, why: str) -> GateError:
    return GateError(f"--metric {metric}: run {run.name} ({run.path}) has no {why}; gate on a metric both runs "
                     "measured")


def _latency(base: FinishedRun, new: FinishedRun) -> Figure:
    samples = []
    for run in (base, new):
        ms, images = _pipeline_batches(run)
        if not ms:
            raise _lacks("latency", run, "timed batches in its steps_timer.csv")
        samples.append([m / i for m, i in zip(ms, images)])
    return latency_figure(*samples)


def _throughput(base: FinishedRun, new: FinishedRun) -> Figure:
    if scenario_of(base) == CAMERAS:
        raise GateError("--metric throughput: a camera run's rate is its frames/s detected over the window: gate on "
                        "--metric fps (and --metric p99 for its latency from arrival)")
    if scenario_of(base) != SINGLE_STREAM:
        # Concurrent streams overlap their batches: only LoadGen's own rate counts.
        values = []
        for run in (base, new):
            rate = run.get("scenario.result.samples_per_s")
            if not rate:
                raise _lacks("throughput", run, "LoadGen samples/s (scenario.result.samples_per_s)")
            values.append(float(rate))
        return single_value_figure("throughput", f"{scenario_of(base)} samples/s", "samples/s", *values,
                                   "LoadGen measures one rate a run")
    batches = []
    for run in (base, new):
        ms, images = _pipeline_batches(run)
        if not ms:
            raise _lacks("throughput", run, "timed batches in its steps_timer.csv")
        batches.append((ms, images))
    return throughput_figure(batches[0][0], batches[0][1], batches[1][0], batches[1][1])


def camera_blocks(run: FinishedRun, metric: str) -> list[np.ndarray]:
    """A camera window's latency from arrival (ms; NaN for a frame not detected), one array per BLOCK_S of arrival,
    a second with no frame an empty one."""
    frames, window = run.camera_window(), run.get("cameras.window") or {}
    if frames is None or window.get("start_s") is None:
        raise _lacks(metric, run, "camera window (summary.json cameras, cameras_frames.csv)")
    start, end = float(window["start_s"]), float(window["end_s"])
    number = np.floor((frames["arrival_s"].to_numpy(dtype=float) - start) / BLOCK_S).astype(int)
    latency = frames["latency_ms"].to_numpy(dtype=float)
    return [latency[number == block] for block in range(max(1, math.ceil((end - start) / BLOCK_S)))]


def camera_p99(draw: list[np.ndarray]) -> float:
    """The p99 of the detected frames' latency (inf when a draw detected none: no latency)."""
    values = np.concatenate(draw)
    detected = values[~np.isnan(values)]
    return float(np.percentile(detected, 99)) if detected.size else math.inf


def camera_fps(draw: list[np.ndarray]) -> float:
    """Frames detected per second of the draw's blocks."""
    return sum(int(np.count_nonzero(~np.isnan(block))) for block in draw) / (len(draw) * BLOCK_S)


def _p99(base: FinishedRun, new: FinishedRun) -> Figure:
    """A camera run's p99 from arrival, with its interval; LoadGen's own p99 a run; else the timed batches'."""
    scenario = scenario_of(base)
    if scenario == CAMERAS:
        return block_figure("p99", "latency p99 from arrival", "ms",
                            (camera_blocks(base, "p99"), camera_blocks(new, "p99")), camera_p99)
    if scenario != SINGLE_STREAM:
        values = []
        for run in (base, new):
            value = run.get("scenario.result.latency_ms.p99")
            if not value:
                raise _lacks("p99", run, "LoadGen p99 latency (scenario.result.latency_ms.p99)")
            values.append(float(value))
        return single_value_figure("p99", f"{scenario} p99 latency", "ms", *values, "LoadGen measures one p99 a run")
    values = []
    for run in (base, new):
        ms, images = _pipeline_batches(run)
        if not ms:
            raise _lacks("p99", run, "timed batches in its steps_timer.csv")
        values.append(float(np.percentile([m / i for m, i in zip(ms, images)], 99)))
    return single_value_figure("p99", "p99 latency per image over the timed batches", "ms/image", *values,
                               "a p99 of the batches, no interval")


def _fps(base: FinishedRun, new: FinishedRun) -> Figure:
    if scenario_of(base) != CAMERAS:
        raise GateError(f"--metric fps: frames/s detected is a camera run's figure, and {base.name} is a "
                        f"{scenario_of(base)} run; gate on throughput")
    return block_figure("fps", "frames/s detected", "frames/s", (camera_blocks(base, "fps"), camera_blocks(new, "fps")),
                        camera_fps)


def _peak_memory(base: FinishedRun, new: FinishedRun) -> Figure:
    name = next((key for key in MEMORY_FIGURES
                 if base.get(f"memory.{key}") is not None and new.get(f"memory.{key}") is not None), None)
    if name is None:
        run = base if base.get("memory.peak_rss_mib") is None else new
        raise _lacks("peak_memory", run, "peak memory (memory sampling was off: benchmark.memory.enabled)")
    return single_value_figure("peak_memory", f"peak memory ({name})", "MiB", float(base.get(f"memory.{name}")),
                               float(new.get(f"memory.{name}")), "one peak a run")


def _map_interval(base: FinishedRun, new: FinishedRun) -> tuple[Optional[tuple[float, float]], str]:
    """When both runs scored a drop against the same reference with an interval over images, their difference's
    interval, taken wide: [new.low - base.high, new.high - base.low] holds every pair of values the two
    intervals allow (the per-image samples that would give a tighter one are not kept)."""
    first, second = base.get("accuracy.drop.interval"), new.get("accuracy.drop.interval")
    if not first or not second or base.get("accuracy.reference.name") != new.get("accuracy.reference.name"):
        return None, ""
    return ((second["low"] - first["high"]) * 100, (second["high"] - first["low"]) * 100), \
        "the two runs' drop intervals against their common reference, combined at their widest"


def _map_drop(base: FinishedRun, new: FinishedRun) -> Figure:
    for run in (base, new):
        if run.get("accuracy.map_50_95") is None:
            raise _lacks("map_drop", run, "mAP (no accuracy pass: give dataset.labels, or a runtime with a reference)")
    if base.get("accuracy.ground_truth.source") != new.get("accuracy.ground_truth.source"):
        raise GateError(f"--metric map_drop: the runs scored mAP against different ground truth "
                        f"({base.get('accuracy.ground_truth.source')} vs {new.get('accuracy.ground_truth.source')}); "
                        "their mAPs do not compare")
    interval, how = _map_interval(base, new)
    return map_drop_figure(float(base.get("accuracy.map_50_95")), float(new.get("accuracy.map_50_95")), interval, how)


def contention_notes(base: FinishedRun, new: FinishedRun, share: float = 0.1) -> list[str]:
    """A line per run that other processes slowed: a regression between such runs may be the machine's."""
    notes = []
    for run in (base, new):
        other = run.get("contention.other_processes_cpu_share")
        if isinstance(other, (int, float)) and other > share:
            notes.append(f"note: other processes used {other:.0%} of the cores during the timed passes of "
                         f"{run.name}: its timings are slower than on a quiet machine; gate runs made on a quiet "
                         "runner")
    return notes


READERS = {"latency": _latency, "throughput": _throughput, "map_drop": _map_drop, "peak_memory": _peak_memory,
           "p99": _p99, "fps": _fps}


def gate_figures(base: FinishedRun, new: FinishedRun, metrics: tuple[str, ...]) -> list[Figure]:
    check_comparable(base, new)
    return [READERS[metric](base, new) for metric in metrics]
