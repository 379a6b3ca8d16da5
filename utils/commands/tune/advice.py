"""The last lines of a plain run: which runtimes and precisions it did not try that this CPU makes promising
(installed runtimes, precisions its flags run natively), and the `tune` command that races them (after a camera
run, the `capacity` command, which races them for the most cameras served); and the last
lines of a race that left the allocator or ONNX Runtime's spinning as they were: the two-candidate races that try
the other setting under the winner. From facts only: no figure is guessed.
"""
from __future__ import annotations

import shlex
from typing import Any, Callable, Optional, Sequence

import yaml

from pipelines.runtimes.registry import SPECS
from utils.commands.tune.goals import Goal
from utils.commands.tune.space import INT8_FLAGS, NATIVE_FLAGS, SCHEDULE_KEYS, Machine, precision_refusal

# Keys tune races over: a plain run's --set of them is not carried into the suggested command, nor its run.id (the
# race's own directory would take that name, which the run holds already).
RACED_KEYS = ("runtime.backend", "runtime.precision", *SCHEDULE_KEYS)
NOT_CARRIED = (*RACED_KEYS, "run.id")
# A camera run's keys that `capacity` sets itself (N, the window, the scenario), and those it takes as flags.
CAPACITY_SETS = ("benchmark.scenario", "cameras.count", "cameras.realtime", "cameras.duration_s", "cameras.warmup_s")
CAPACITY_FLAGS = {"dataset.path": "--source", "cameras.fps": "--fps"}
ALLOCATOR_KEY = "runtime.allocator"
SPINNING_KEY, SPINNING_BACKEND = "runtime.spinning", "onnxruntime"
# Long enough for a follow-up's two candidates' rounds at the sizes tune's own races run.
FOLLOW_UP_MINUTES = 5


def _promising(precision: str, machine: Machine) -> tuple[bool, str]:
    """Whether the CPU's flags make the precision worth a try, and the flags that say so."""
    flags = NATIVE_FLAGS.get(precision) or (INT8_FLAGS if precision == "int8" else ())
    present = [flag for flag in flags if flag in machine.flags]
    if precision == "int8":
        return bool(present), ", ".join(present)
    return precision_refusal(precision, machine) is None, ", ".join(present)


def advice_lines(runtime: dict[str, Any], machine: Machine, config_file: str, overrides: Sequence[str],
                 refuse: Callable[[list[str]], Optional[str]] = lambda overrides: None,
                 cameras: bool = False) -> list[str]:
    """[] when there is nothing the run left untried here. `refuse(overrides)`: why the run's config cannot take
    that runtime and precision (a file no torch runtime reads, say), None when it can. `cameras`: the run was a
    camera run, whose question is how many cameras are served: the command is `capacity`, not `tune` (which races
    single images)."""
    ran = (runtime.get("backend"), runtime.get("precision"))
    untried: dict[str, list[str]] = {}
    flags_of: dict[str, str] = {}
    for name in machine.installed:
        for precision in SPECS[name].precisions:
            promising, flags = _promising(precision, machine)
            if (name, precision) != ran and promising and refuse(
                    [f"runtime.backend={name}", f"runtime.precision={precision}"]) is None:
                untried.setdefault(precision, []).append(name)
                flags_of[precision] = flags
    if not untried:
        return []
    parts = [f"{precision} on {', '.join(names)}" + (f" (this CPU has {flags_of[precision]})"
                                                     if flags_of[precision] else "")
             for precision, names in untried.items()]
    kept = [item for item in overrides if _key(item) not in NOT_CARRIED]
    if cameras:
        return [f"worth trying on this CPU, not run here: {'; '.join(parts)}",
                "to race them with batch sizes and threads for the most cameras served within a latency budget, "
                f"their accuracy judged on images: {capacity_command(config_file, kept)}"]
    command = " ".join(["python benchmark.py tune --config", shlex.quote(config_file),
                        *(f"--set {shlex.quote(item)}" for item in kept)])
    return [f"worth trying on this CPU, not run here: {'; '.join(parts)}",
            f"to race them with batch sizes and threads for the fastest whose accuracy holds: {command}"]


def capacity_command(config_file: str, overrides: Sequence[str]) -> str:
    """The capacity command of a camera run's settings: the keys it sets itself left out, its source and rate as
    its flags (one cameras.sources entry is its --source), the rest as --set."""
    words = ["python benchmark.py capacity --config", shlex.quote(config_file)]
    for item in overrides:
        key, _, value = (part.strip() for part in item.partition("="))
        if key in CAPACITY_SETS:
            continue
        if key == "cameras.sources":
            try:
                sources = yaml.safe_load(value)
            except yaml.YAMLError:
                sources = None
            if isinstance(sources, list) and len(sources) == 1:
                words.append(f"--source {shlex.quote(str(sources[0]))}")
                continue
        if key in CAPACITY_FLAGS:
            try:
                shown = yaml.safe_load(value)
            except yaml.YAMLError:
                shown = value
            words.append(f"{CAPACITY_FLAGS[key]} {shlex.quote(str(shown))}")
            continue
        words.append(f"--set {shlex.quote(item)}")
    return " ".join(words)


def _key(item: str) -> str:
    return item.partition("=")[0].strip()


def goal_arguments(goal: Goal) -> list[str]:
    """The tune arguments that ask for `goal` again (none for the default, latency at p50)."""
    arguments = [] if goal.name == "latency" else ["--goal", goal.name]
    if goal.name == "latency" and goal.percentile != "p50":
        arguments += ["--percentile", goal.percentile]
    if goal.target_ms is not None:
        arguments += ["--target-ms", f"{goal.target_ms:g}"]
    return arguments


def _winner_sets(winner_set_line: str) -> list[str]:
    words = shlex.split(winner_set_line)
    return [value for flag, value in zip(words[::2], words[1::2]) if flag == "--set"]


def _race_under_winner(config_file: str, overrides: Sequence[str], winner: list[str], sweep: str,
                       goal: Goal) -> str:
    fixed = {_key(item) for item in winner}
    kept = [item for item in overrides if _key(item) not in fixed]
    return " ".join(["python benchmark.py tune --config", shlex.quote(config_file),
                     *(f"--set {shlex.quote(item)}" for item in [*kept, *winner]), f"--sweep {sweep}",
                     *goal_arguments(goal), f"--minutes {FOLLOW_UP_MINUTES}"])


def spinning_line(config_file: str, overrides: Sequence[str], sweeps: Sequence[str], goal: Goal,
                  winner_set_line: Optional[str], winner_backend: Optional[str], spinning: bool) -> Optional[str]:
    """After a race won by ONNX Runtime: what its pool threads did (`spinning`) and the command that races the
    other way under the winner. None when another runtime won, or the race set or raced the key."""
    if winner_set_line is None or winner_backend != SPINNING_BACKEND:
        return None
    if SPINNING_KEY in {_key(item) for item in [*overrides, *sweeps]}:
        return None
    command = _race_under_winner(config_file, overrides, _winner_sets(winner_set_line),
                                 f"{SPINNING_KEY}=true,false", goal)
    return (f"not raced: {SPINNING_KEY}, which changes no answer: the winner ran with ONNX Runtime's pool threads "
            f"{'spinning' if spinning else 'blocking'} when idle ({SPINNING_KEY}={str(spinning).lower()}"
            f"{', its own default' if spinning else ''}); spinning wakes faster, blocking leaves the cores to the "
            f"torch ops after the forward; to race it under the winner: {command}")


def allocator_line(config_file: str, overrides: Sequence[str], sweeps: Sequence[str], goal: Goal,
                   winner_set_line: Optional[str], keep_heap_refused: Optional[str]) -> Optional[str]:
    """After a race: the command that races the winner with glibc keeping the memory it frees against the allocator
    as the process started. None when the race set or raced the allocator, had no winner, or keep_heap cannot
    apply here (`keep_heap_refused`, utils.preflight.heap_setting)."""
    if winner_set_line is None or keep_heap_refused is not None:
        return None
    if ALLOCATOR_KEY in {_key(item) for item in [*overrides, *sweeps]}:
        return None
    command = _race_under_winner(config_file, overrides, _winner_sets(winner_set_line),
                                 f"{ALLOCATOR_KEY}=inherit,keep_heap", goal)
    return ("not raced: runtime.allocator, which changes no answer: glibc hands the memory a forward frees back to "
            "the kernel, which faults it in and zeroes it again the next forward, and keep_heap keeps it (the "
            "deployment then sets GLIBC_TUNABLES, docs/below-the-layer.md); to race it under the winner: "
            + command)

