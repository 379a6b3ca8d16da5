"""What `tune` may try: the candidates of this CPU and this model, from the facts (the CPU's flags and cores, the
runtimes installed and their specs, the images there are), each refusal with its reason. The user's `--set`
fixes an axis and `--sweep` narrows it (or adds one). Nothing is measured here.
"""
from __future__ import annotations

import importlib.util
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional

from pipelines.runtimes.registry import SPECS
from pipelines.runtimes.spec import quantizes
from utils.core.errors import UsageError
from utils.measure.below_layer.kernels import cpu_flags
from utils.commands.sweep.plan import MAX_RUNS, parse_axis, safe_name

BACKEND, PRECISION = "runtime.backend", "runtime.precision"
BATCH, THREADS, STREAMS, PINNING = "dataset.batch_size", "runtime.threads", "runtime.streams", "runtime.pinning"
SCENARIO_KEY = "benchmark.scenario"
# Keys that change how the work is scheduled, not what is computed: a candidate differing from another only in
# these reuses its accuracy verdict once their detections are checked equal. Every other key is part of the way
# of computing the network (runtime, precision, quantization settings, a runtime's own options).
SCHEDULE_KEYS = (BATCH, THREADS, STREAMS, PINNING)
# A precision the CPU runs natively only with one of these flags (as /proc/cpuinfo spells them); without them
# a runtime emulates it, slower than fp32.
NATIVE_FLAGS = {"bf16": ("avx512_bf16", "amx_bf16"), "int8+bf16": ("avx512_bf16", "amx_bf16")}
# What makes int8 fast, said beside its candidates: not a condition, int8 runs without them.
INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
MAX_BATCH = 8


class SpaceError(UsageError):
    """A space the user asked for that cannot be raced; the message names the key and the fix."""


@dataclass(frozen=True)
class Machine:
    flags: frozenset[str]
    cores: int  # the CPUs this process may run on
    installed: tuple[str, ...]  # runtime names whose library is importable


@dataclass(frozen=True)
class Candidate:
    assignments: tuple[tuple[str, str], ...]  # (key, raw value), axes in space order

    @property
    def name(self) -> str:
        return safe_name(self.assignments)

    @property
    def values(self) -> dict[str, str]:
        return dict(self.assignments)

    @property
    def way(self) -> tuple[tuple[str, str], ...]:
        """The way of computing the network: every value but the scheduling ones."""
        return tuple(item for item in self.assignments if item[0] not in SCHEDULE_KEYS)

    @property
    def overrides(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.assignments]


@dataclass
class Space:
    axes: dict[str, tuple[str, ...]]  # key -> the values raced, in order
    candidates: list[Candidate]
    refusals: list[str] = field(default_factory=list)  # what was left out before measuring, and why
    notes: list[str] = field(default_factory=list)  # facts said beside the space (int8's instructions)


def this_machine(cpuinfo: Path = Path("/proc/cpuinfo")) -> Machine:
    try:
        flags = cpu_flags(cpuinfo.read_text())
    except OSError:
        flags = set()
    installed = tuple(spec.name for spec in SPECS.values()
                      if spec.library is None or importlib.util.find_spec(spec.library) is not None)
    return Machine(frozenset(flags), len(os.sched_getaffinity(0)), installed)


def doubling(limit: int, with_limit: bool = True) -> tuple[str, ...]:
    """1, 2, 4, ... up to limit, and limit itself unless `with_limit` is false."""
    values = [value for value in (2 ** power for power in range(limit.bit_length())) if value <= limit]
    return tuple(str(value) for value in sorted(set(values + ([limit] if with_limit else []))))


def precision_refusal(precision: str, machine: Machine) -> Optional[str]:
    needed = NATIVE_FLAGS.get(precision)
    if needed and not machine.flags & set(needed):
        return (f"{precision}: this CPU has none of {', '.join(needed)}, so it would be emulated, slower than "
                "fp32")
    return None


def int8_note(machine: Machine) -> str:
    present = [flag for flag in INT8_FLAGS if flag in machine.flags]
    return ("int8: this CPU has " + (", ".join(present) if present else
                                     f"none of {', '.join(INT8_FLAGS)} (int8 multiply-adds take two instructions)")
            + "; each int8 way is judged against the accuracy budget before it can win")


def _fact_axes(machine: Machine, runs_streams: bool, images: int) -> tuple[dict[str, tuple[str, ...]], list[str]]:
    refusals = []
    backends = tuple(name for name in SPECS if name in machine.installed)
    refusals += [f"{BACKEND}={name}: not installed here (its package {SPECS[name].library} is missing)"
                 for name in SPECS if name not in machine.installed]
    precisions = []
    for precision in dict.fromkeys(p for name in backends for p in SPECS[name].precisions):
        reason = precision_refusal(precision, machine)
        if reason:
            refusals.append(f"{PRECISION}={reason}")
        else:
            precisions.append(precision)
    cores = max(machine.cores, 1)
    axes = {BACKEND: backends, PRECISION: tuple(precisions), BATCH: doubling(max(1, min(MAX_BATCH, images)), with_limit=False),
            THREADS: doubling(cores)}
    if runs_streams:
        axes[STREAMS] = doubling(cores)
    else:
        refusals.append(f"{STREAMS}: only 1, the scenario keeps one request in flight")
    axes[PINNING] = ("false", "true") if cores > 1 else ("false",)
    if cores == 1:
        refusals.append(f"{PINNING}: only false, one core leaves nothing to pin apart")
    return axes, refusals


def _user_axes(axes: dict[str, tuple[str, ...]], fixed: Mapping[str, str], narrowed: list[str]) -> None:
    """--set fixes an axis to one value, --sweep gives it its values (or adds an axis of another key)."""
    for key in list(axes):
        if key in fixed:
            axes[key] = (fixed[key],)
    for argument in narrowed:
        axis = parse_axis(argument)
        if axis.key in fixed:
            raise SpaceError(f"--sweep {axis.key}=... and --set {axis.key}=... both name {axis.key}; keep one")
        axes[axis.key] = axis.values


def _check_values(axes: dict[str, tuple[str, ...]], machine: Machine) -> None:
    """Values the user gave that this CPU cannot run, refused by name."""
    for precision in axes.get(PRECISION, ()):
        reason = precision_refusal(precision, machine)
        if reason:
            raise SpaceError(f"{PRECISION}={reason}; leave it out of --set/--sweep")
    for backend in axes.get(BACKEND, ()):
        if backend in SPECS and backend not in machine.installed:
            raise SpaceError(f"{BACKEND}={backend}: not installed here (pip install {SPECS[backend].library}), "
                             "or leave it out of --set/--sweep")
    for key in (THREADS, STREAMS):
        for value in axes.get(key, ()):
            if value.isdigit() and int(value) > machine.cores:
                raise SpaceError(f"{key}={value}: this process may run on {machine.cores} core(s); give at most "
                                 f"{machine.cores}")


def _size(axes: dict[str, tuple[str, ...]]) -> int:
    size = 1
    for values in axes.values():
        size *= len(values)
    return size


def build_space(machine: Machine, runs_streams: bool, images: int, fixed: Mapping[str, str], narrowed: list[str],
                refuse: Callable[[list[str]], Optional[str]]) -> Space:
    """`refuse(overrides)`: why a configuration cannot run (the config's own validation), None when it can.
    It is asked once per way of computing (runtime x precision x the other non-scheduling keys) and once per
    candidate that is left."""
    axes, refusals = _fact_axes(machine, runs_streams, images)
    _user_axes(axes, fixed, narrowed)
    if PRECISION not in fixed and not any(parse_axis(argument).key == PRECISION for argument in narrowed):
        # Only the precisions the runtimes left in the race offer.
        offered = {p for name in axes.get(BACKEND, ()) if name in SPECS for p in SPECS[name].precisions}
        axes[PRECISION] = tuple(p for p in axes[PRECISION] if p in offered)
    _check_values(axes, machine)
    size = _size(axes)
    if size > MAX_RUNS:
        product = " x ".join(f"{len(values)} {key}" for key, values in axes.items())
        raise SpaceError(f"the space holds {size:,} candidates ({product}), more than {MAX_RUNS:,}; fix an axis "
                         "with --set KEY=VALUE or narrow one with --sweep KEY=V1,V2")
    keys = list(axes)
    candidates, refused_ways, pruned = [], {}, {}
    for combination in itertools.product(*axes.values()):
        candidate = Candidate(tuple(zip(keys, combination)))
        if candidate.way not in refused_ways:
            refused_ways[candidate.way] = refuse([f"{key}={value}" for key, value in candidate.way])
        unscheduled = _unscheduled(candidate)
        if unscheduled:
            pruned[unscheduled] = pruned.get(unscheduled, 0) + 1
        elif refused_ways[candidate.way] is None:
            candidates.append(candidate)
    refusals += [f"{safe_name(way)}: {reason}" for way, reason in refused_ways.items() if reason]
    refusals += [f"{count} candidate(s) with {reason}" for reason, count in pruned.items()]
    left = []
    for candidate in candidates:
        reason = refuse(candidate.overrides)
        if reason:
            refusals.append(f"{candidate.name}: {reason}")
        else:
            left.append(candidate)
    notes = [int8_note(machine)] if any(map(quantizes, axes.get(PRECISION, ()))) else []
    if not left:
        raise SpaceError("no candidate of the space can run here:\n  " + "\n  ".join(refusals[-10:]))
    return Space(axes, left, refusals, notes)


def _unscheduled(candidate: Candidate) -> Optional[str]:
    """Why a candidate's scheduling means nothing, else None."""
    values = candidate.values
    threads = int(values[THREADS]) if values.get(THREADS, "").isdigit() else None
    streams = int(values[STREAMS]) if values.get(STREAMS, "").isdigit() else 1
    if threads is not None and streams > threads:
        return "more streams than threads (the threads are split between the streams)"
    if values.get(PINNING) == "true" and threads is not None and threads < 2:
        return "pinning at 1 thread (nothing to pin apart)"
    return None
