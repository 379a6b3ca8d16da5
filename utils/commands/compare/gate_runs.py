"""The gate's figures read out of two finished runs, and the checks that the two runs may be gated at all."""
from __future__ import annotations

from typing import Optional

from utils.commands.compare.gate import (Figure, latency_figure, map_drop_figure, single_value_figure, throughput_figure)
from utils.config.schema import SINGLE_STREAM
from utils.core.errors import UsageError
from utils.storage.finished_run import FinishedRun
from utils.record.steps import PIPELINE_STEP

METRICS = ("latency", "throughput", "map_drop", "peak_memory")
DEFAULT_METRICS = ("latency",)
MEMORY_FIGURES = ("peak_pss_mib", "peak_rss_mib")


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


READERS = {"latency": _latency, "throughput": _throughput, "map_drop": _map_drop, "peak_memory": _peak_memory}


def gate_figures(base: FinishedRun, new: FinishedRun, metrics: tuple[str, ...]) -> list[Figure]:
    check_comparable(base, new)
    return [READERS[metric](base, new) for metric in metrics]
