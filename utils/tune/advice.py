"""The last lines of a plain run: which runtimes and precisions it did not try that this CPU makes promising
(installed runtimes, precisions its flags run natively), and the `tune` command that races them. From facts
only: no figure is guessed.
"""
from __future__ import annotations

import shlex
from typing import Any, Callable, Optional, Sequence

from pipelines.runtimes.registry import SPECS
from utils.tune.space import INT8_FLAGS, NATIVE_FLAGS, SCHEDULE_KEYS, Machine, precision_refusal

# Keys tune races over: a plain run's --set of them is not carried into the suggested command.
RACED_KEYS = ("runtime.backend", "runtime.precision", *SCHEDULE_KEYS)


def _promising(precision: str, machine: Machine) -> tuple[bool, str]:
    """Whether the CPU's flags make the precision worth a try, and the flags that say so."""
    flags = NATIVE_FLAGS.get(precision) or (INT8_FLAGS if precision == "int8" else ())
    present = [flag for flag in flags if flag in machine.flags]
    if precision == "int8":
        return bool(present), ", ".join(present)
    return precision_refusal(precision, machine) is None, ", ".join(present)


def advice_lines(runtime: dict[str, Any], machine: Machine, config_file: str, overrides: Sequence[str],
                 refuse: Callable[[list[str]], Optional[str]] = lambda overrides: None) -> list[str]:
    """[] when there is nothing the run left untried here. `refuse(overrides)`: why the run's config cannot take
    that runtime and precision (a file no torch runtime reads, say), None when it can."""
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
    kept = [item for item in overrides if item.partition("=")[0].strip() not in RACED_KEYS]
    command = " ".join(["python benchmark.py tune --config", shlex.quote(config_file),
                        *(f"--set {shlex.quote(item)}" for item in kept)])
    return [f"worth trying on this CPU, not run here: {'; '.join(parts)}",
            f"to race them with batch sizes and threads for the fastest whose accuracy holds: {command}"]
